//! The largest eigenvalues of an inverse operator, by restarted Arnoldi: the mode solver's
//! shift-invert step ([`super::solve`] factorises `A - shift I`; the eigenvalues of its
//! inverse nearest infinity are the eigenvalues of A nearest the shift).

use super::ModeError;
use faer::linalg::solvers::Solve;
use faer::sparse::linalg::solvers::Lu;
use faer::Mat;

/// Ritz pairs are accepted when their Arnoldi residual is below this, relative to the value.
const TOLERANCE: f64 = 1e-8;

/// Restarts before giving up.
const RESTARTS: usize = 40;

/// Ritz pairs kept across a restart beyond those asked for: the restart keeps the subspace of
/// the next few as well, so the last asked mode's convergence is set by its distance to the
/// first mode not kept rather than to the next one.
const EXTRA: usize = 4;

/// The `count` eigenvalues of largest magnitude of `inv(A)` (A given by its LU, `n` x `n`),
/// real ones only (a lossless waveguide's), each with its eigenvector: (mu, x), largest
/// first.
///
/// Thick-restarted Arnoldi (Krylov-Schur in the form of Stewart, SIAM J. Matrix Anal. Appl.
/// 23, 2001, with real Ritz vectors for the Schur vectors): after `m` steps, the wanted Ritz
/// vectors (orthonormalised) and the residual direction start the next cycle, which keeps the
/// relation `inv(A) W = W T + r b^T` exact (the Ritz vectors span an invariant subspace of the
/// projected matrix), so each cycle adds `m - k` new directions to what was found instead of
/// starting over.
///
/// `warm`: vectors near the wanted eigenvectors (a nearby frequency's modes), whose sum starts
/// the iteration instead of the fixed pseudo-random vector. `held`: the unknowns a wall or a
/// PEC holds at zero, kept out of the start (their rows are `-shift` alone, so the iteration
/// then never reaches them: otherwise their many exact eigenvectors, beta^2 = 0, crowd the
/// wanted modes out).
pub(super) fn largest_inverse(
    lu: &Lu<usize, f64>,
    n: usize,
    count: usize,
    warm: &[&[f64]],
    held: &[bool],
) -> Result<Vec<(f64, Vec<f64>)>, ModeError> {
    let m = n.min((6 * count).max(40));
    let keep = (count + EXTRA).min(m / 2).max(count.min(m - 1));
    let apply = |x: &[f64]| -> Vec<f64> {
        let mut b = Mat::<f64>::from_fn(n, 1, |i, _| x[i]);
        lu.solve_in_place(b.as_mut());
        (0..n).map(|i| b[(i, 0)]).collect()
    };
    // A fixed start (a linear congruential sequence): the same modes, in the same order and
    // sign, every run.
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut start: Vec<f64> = (0..n)
        .map(|_| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect();
    if !warm.is_empty() {
        // Each warm vector at unit length, plus a trace of the random start so that nothing
        // the warm vectors miss is excluded from the Krylov space.
        let r = norm(&start);
        start.iter_mut().for_each(|x| *x *= 1e-3 / r);
        for v in warm {
            let len = norm(v);
            start.iter_mut().zip(*v).for_each(|(a, b)| *a += b / len);
        }
    }
    for (x, h) in start.iter_mut().zip(held) {
        if *h {
            *x = 0.0;
        }
    }
    let s = norm(&start);
    let mut basis = vec![start.iter().map(|x| x / s).collect::<Vec<f64>>()];
    let mut h = Mat::<f64>::zeros(m + 1, m);
    let mut kept = 0;
    let mut best = 0;
    for _ in 0..RESTARTS {
        let closed = extend(&apply, &mut basis, &mut h, kept, m);
        // A closed Krylov space is invariant: every basis vector counts, with no residual.
        let k = if closed { basis.len() } else { basis.len() - 1 };
        let (pairs, ys, converged) = ritz(&basis, &h, k, keep);
        let done = converged[..count.min(converged.len())]
            .iter()
            .take_while(|c| **c)
            .count();
        best = best.max(done);
        if done >= count || closed {
            if done < count {
                break;
            }
            return Ok(pairs.into_iter().take(count).collect());
        }
        kept = restart(&mut basis, &mut h, &ys, k);
    }
    Err(ModeError::Unconverged {
        asked: count,
        found: best,
    })
}

/// A fixed pseudo-random linear functional of `x` (weights uniform in [-0.5, 0.5) from a
/// linear congruential sequence): the solver fixes each mode's sign by it.
pub(super) fn probe(x: &[f64]) -> f64 {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    x.iter()
        .map(|v| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            v * ((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
        })
        .sum()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// Arnoldi steps from column `from` to `m` (twice-orthogonalised Gram-Schmidt against the whole
/// basis), `basis` holding `from + 1` orthonormal vectors and `h` the projection so far; true
/// when the Krylov space closed (an invariant subspace: the basis stops short).
fn extend(
    apply: &dyn Fn(&[f64]) -> Vec<f64>,
    basis: &mut Vec<Vec<f64>>,
    h: &mut Mat<f64>,
    from: usize,
    m: usize,
) -> bool {
    for j in from..m {
        let mut w = apply(&basis[j]);
        for _ in 0..2 {
            for (i, v) in basis.iter().enumerate() {
                let c = dot(v, &w);
                w.iter_mut().zip(v).for_each(|(a, b)| *a -= c * b);
                h[(i, j)] += c;
            }
        }
        let len = norm(&w);
        h[(j + 1, j)] = len;
        if len < 1e-300 {
            return true;
        }
        basis.push(w.iter().map(|x| x / len).collect());
    }
    false
}

/// Restart on the Ritz vectors `ys` (coefficients over the first `k` basis vectors, real),
/// orthonormalised, and the residual direction (basis vector `k`): the new basis holds them,
/// the new projection their Rayleigh quotient and the residual's coupling row, and Arnoldi
/// continues from the residual direction. Returns the number of Ritz vectors kept.
fn restart(basis: &mut Vec<Vec<f64>>, h: &mut Mat<f64>, ys: &[Vec<f64>], k: usize) -> usize {
    // Orthonormalise the coefficient vectors (modified Gram-Schmidt, twice), dropping any that
    // depend on the others.
    let mut q: Vec<Vec<f64>> = Vec::new();
    for y in ys {
        let mut v = y.clone();
        for _ in 0..2 {
            for u in &q {
                let c = dot(u, &v);
                v.iter_mut().zip(u).for_each(|(a, b)| *a -= c * b);
            }
        }
        let len = norm(&v);
        if len > 1e-10 {
            q.push(v.iter().map(|x| x / len).collect());
        }
    }
    let p = q.len();
    let n = basis[0].len();
    let residual = basis[k].clone();
    let tail = h[(k, k - 1)];
    // T = Q^T H Q over the first k rows and columns; b = tail * (last row of Q).
    let mut t = Mat::<f64>::zeros(p, p);
    for (a, qa) in q.iter().enumerate() {
        for (b, qb) in q.iter().enumerate() {
            let mut sum = 0.0;
            for r in 0..k {
                let mut row = 0.0;
                for c in 0..k {
                    row += h[(r, c)] * qb[c];
                }
                sum += qa[r] * row;
            }
            t[(a, b)] = sum;
        }
    }
    let new: Vec<Vec<f64>> = q
        .iter()
        .map(|coef| {
            let mut x = vec![0.0; n];
            for (c, v) in coef.iter().zip(basis.iter()) {
                x.iter_mut().zip(v).for_each(|(a, b)| *a += c * b);
            }
            x
        })
        .collect();
    *basis = new;
    basis.push(residual);
    let (rows, cols) = (h.nrows(), h.ncols());
    *h = Mat::<f64>::zeros(rows, cols);
    for a in 0..p {
        for b in 0..p {
            h[(a, b)] = t[(a, b)];
        }
        h[(p, a)] = tail * q[a][k - 1];
    }
    p
}

/// The real Ritz pairs of the projection `h` (its first k rows and columns) over the basis,
/// largest magnitude first, the first `count` of them: (mu, x) with x over the whole space, the
/// coefficient vectors over the basis, and whether each has converged (its Arnoldi residual
/// `|h[k, k-1] s[k-1]|` below [`TOLERANCE`] of its value).
#[allow(clippy::type_complexity)] // pairs, their coefficients and their convergence
fn ritz(
    basis: &[Vec<f64>],
    h: &Mat<f64>,
    k: usize,
    count: usize,
) -> (Vec<(f64, Vec<f64>)>, Vec<Vec<f64>>, Vec<bool>) {
    let square = Mat::from_fn(k, k, |i, j| h[(i, j)]);
    let Ok(eig) = square.eigen() else {
        return (Vec::new(), Vec::new(), Vec::new());
    };
    let values = eig.S().column_vector();
    let vectors = eig.U();
    let mut order: Vec<usize> = (0..k)
        .filter(|&i| values[i].im.abs() <= 1e-8 * values[i].norm())
        .collect();
    order.sort_by(|&a, &b| values[b].norm().total_cmp(&values[a].norm()));
    order.truncate(count);
    let tail = if h.nrows() > k {
        h[(k, k - 1)].abs()
    } else {
        0.0
    };
    let mut converged = Vec::with_capacity(order.len());
    let mut coefficients = Vec::with_capacity(order.len());
    let pairs = order
        .iter()
        .map(|&i| {
            let mu = values[i].re;
            let s: Vec<f64> = (0..k).map(|r| vectors[(r, i)].re).collect();
            let len = norm(&s);
            let s: Vec<f64> = s.iter().map(|x| x / len).collect();
            converged.push(tail * s[k - 1].abs() <= TOLERANCE * mu.abs());
            let n = basis[0].len();
            let mut x = vec![0.0; n];
            for (c, v) in s.iter().zip(&basis[..k]) {
                x.iter_mut().zip(v).for_each(|(a, b)| *a += c * b);
            }
            coefficients.push(s);
            (mu, x)
        })
        .collect();
    (pairs, coefficients, converged)
}
