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

/// The `count` eigenvalues of largest magnitude of `inv(A)` (A given by its LU, `n` x `n`),
/// real ones only (a lossless waveguide's), each with its eigenvector: (mu, x), largest
/// first.
pub(super) fn largest_inverse(
    lu: &Lu<usize, f64>,
    n: usize,
    count: usize,
) -> Result<Vec<(f64, Vec<f64>)>, ModeError> {
    let m = n.min((6 * count).max(40));
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
    let mut best = 0;
    for _ in 0..RESTARTS {
        let (basis, h) = arnoldi(&apply, &start, m);
        let k = basis.len() - 1;
        let (pairs, converged) = ritz(&basis, &h, k, count);
        best = best.max(converged);
        if converged >= count {
            return Ok(pairs.into_iter().take(count).collect());
        }
        // Restart from the wanted Ritz vectors' sum: it holds what was found of each.
        start = pairs.iter().fold(vec![0.0; n], |mut acc, (_, x)| {
            acc.iter_mut().zip(x).for_each(|(a, b)| *a += b);
            acc
        });
    }
    Err(ModeError::Unconverged {
        asked: count,
        found: best,
    })
}

/// `m` steps of Arnoldi on `apply` from `start` (twice-orthogonalised Gram-Schmidt): the
/// orthonormal basis (m + 1 vectors, fewer where the Krylov space closed) and the Hessenberg
/// matrix (rows = basis length, columns one fewer).
fn arnoldi(
    apply: &dyn Fn(&[f64]) -> Vec<f64>,
    start: &[f64],
    m: usize,
) -> (Vec<Vec<f64>>, Mat<f64>) {
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let norm = |a: &[f64]| dot(a, a).sqrt();
    let s = norm(start);
    let mut basis = vec![start.iter().map(|x| x / s).collect::<Vec<f64>>()];
    let mut h = Mat::<f64>::zeros(m + 1, m);
    for j in 0..m {
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
            break;
        }
        basis.push(w.iter().map(|x| x / len).collect());
    }
    let rows = basis.len();
    let h = Mat::from_fn(rows, rows - 1, |i, j| h[(i, j)]);
    (basis, h)
}

/// The real Ritz pairs of the Arnoldi factorisation (basis of k + 1 vectors, h of
/// (k + 1) x k), largest magnitude first, the first `count` of them, and how many of those
/// have converged.
fn ritz(basis: &[Vec<f64>], h: &Mat<f64>, k: usize, count: usize) -> (Vec<(f64, Vec<f64>)>, usize) {
    let square = Mat::from_fn(k, k, |i, j| h[(i, j)]);
    let Ok(eig) = square.eigen() else {
        return (Vec::new(), 0);
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
    let mut converged = 0;
    let pairs = order
        .iter()
        .map(|&i| {
            let mu = values[i].re;
            let s: Vec<f64> = (0..k).map(|r| vectors[(r, i)].re).collect();
            let len = s.iter().map(|x| x * x).sum::<f64>().sqrt();
            if tail * (s[k - 1] / len).abs() <= TOLERANCE * mu.abs() {
                converged += 1;
            }
            let n = basis[0].len();
            let mut x = vec![0.0; n];
            for (r, v) in basis[..k].iter().enumerate() {
                let c = s[r] / len;
                x.iter_mut().zip(v).for_each(|(a, b)| *a += c * b);
            }
            (mu, x)
        })
        .collect();
    (pairs, converged)
}
