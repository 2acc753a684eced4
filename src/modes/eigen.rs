//! The largest eigenvalues of an inverse operator, by restarted Arnoldi: the mode solver's
//! shift-invert step ([`super::solve`] factorises `A - shift I`; the eigenvalues of its
//! inverse nearest infinity are the eigenvalues of A nearest the shift).

use super::ModeError;
use faer::{c64, Mat};
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

/// The field of a solve: `f64` for a lossless cross-section (real modes), [`c64`] for a lossy
/// one (complex beta^2 and profiles). The Krylov iteration is written once over it.
pub(super) trait Scalar:
    Copy
    + PartialEq
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + AddAssign
    + SubAssign
{
    /// Zero.
    const ZERO: Self;
    /// The real number `x`.
    fn real(x: f64) -> Self;
    /// The number `re + i im` (its real part alone in a real field).
    fn from_parts(re: f64, im: f64) -> Self;
    /// The complex conjugate (itself for a real number).
    fn conjugate(self) -> Self;
    /// The absolute value.
    fn modulus(self) -> f64;
    /// The eigenvalues and eigenvectors of the first `k` rows and columns of `h`.
    fn eigen(h: &Mat<Self>, k: usize) -> Option<(Vec<c64>, Mat<c64>)>;
    /// An eigenvalue `z` of the projection as this scalar: None for a real problem's complex
    /// pair (a lossless guide's modes are real).
    fn from_eigenvalue(z: c64) -> Option<Self>;
    /// An eigenvector entry as this scalar (its real part for a real problem).
    fn from_entry(z: c64) -> Self;
}

impl Scalar for f64 {
    const ZERO: f64 = 0.0;
    fn real(x: f64) -> f64 {
        x
    }
    fn from_parts(re: f64, _im: f64) -> f64 {
        re
    }
    fn conjugate(self) -> f64 {
        self
    }
    fn modulus(self) -> f64 {
        self.abs()
    }
    fn eigen(h: &Mat<f64>, k: usize) -> Option<(Vec<c64>, Mat<c64>)> {
        let square = Mat::from_fn(k, k, |i, j| h[(i, j)]);
        let eig = square.eigen().ok()?;
        let values = eig.S().column_vector().iter().copied().collect();
        Some((values, eig.U().to_owned()))
    }
    fn from_eigenvalue(z: c64) -> Option<f64> {
        (z.im.abs() <= 1e-8 * z.norm()).then_some(z.re)
    }
    fn from_entry(z: c64) -> f64 {
        z.re
    }
}

impl Scalar for c64 {
    const ZERO: c64 = c64 { re: 0.0, im: 0.0 };
    fn real(x: f64) -> c64 {
        c64::new(x, 0.0)
    }
    fn from_parts(re: f64, im: f64) -> c64 {
        c64::new(re, im)
    }
    fn conjugate(self) -> c64 {
        self.conj()
    }
    fn modulus(self) -> f64 {
        self.norm()
    }
    fn eigen(h: &Mat<c64>, k: usize) -> Option<(Vec<c64>, Mat<c64>)> {
        let square = Mat::from_fn(k, k, |i, j| h[(i, j)]);
        let eig = square.eigen().ok()?;
        let values = eig.S().column_vector().iter().copied().collect();
        Some((values, eig.U().to_owned()))
    }
    fn from_eigenvalue(z: c64) -> Option<c64> {
        Some(z)
    }
    fn from_entry(z: c64) -> c64 {
        z
    }
}

/// Ritz pairs are accepted when their Arnoldi residual is below this, relative to the value.
const TOLERANCE: f64 = 1e-8;

/// Restarts before giving up.
const RESTARTS: usize = 40;

/// Ritz pairs kept across a restart beyond those asked for: the restart keeps the subspace of
/// the next few as well, so the last asked mode's convergence is set by its distance to the
/// first mode not kept rather than to the next one.
const EXTRA: usize = 4;

/// The `count` eigenvalues of largest magnitude of `inv(A)` (`apply` applies it, `n` x `n`),
/// each with its eigenvector: (mu, x), largest first; for a real problem real ones only (a
/// lossless waveguide's).
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
pub(super) fn largest_inverse<T: Scalar>(
    apply: &dyn Fn(&[T]) -> Vec<T>,
    n: usize,
    count: usize,
    warm: &[&[T]],
    held: &[bool],
) -> Result<Vec<(T, Vec<T>)>, ModeError> {
    let m = n.min((6 * count).max(40));
    let keep = (count + EXTRA).min(m / 2).max(count.min(m - 1));
    // A fixed start (a linear congruential sequence): the same modes, in the same order and
    // sign, every run.
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut start: Vec<T> = (0..n)
        .map(|_| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            T::real((seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
        })
        .collect();
    if !warm.is_empty() {
        // Each warm vector at unit length, plus a trace of the random start so that nothing
        // the warm vectors miss is excluded from the Krylov space.
        let r = T::real(norm(&start));
        start.iter_mut().for_each(|x| *x = *x * (T::real(1e-3) / r));
        for v in warm {
            let len = T::real(norm(v));
            start.iter_mut().zip(*v).for_each(|(a, b)| *a += *b / len);
        }
    }
    for (x, h) in start.iter_mut().zip(held) {
        if *h {
            *x = T::ZERO;
        }
    }
    let s = T::real(norm(&start));
    let mut basis = vec![start.iter().map(|x| *x / s).collect::<Vec<T>>()];
    let mut h = Mat::<T>::from_fn(m + 1, m, |_, _| T::ZERO);
    let mut kept = 0;
    let mut best = 0;
    for _ in 0..RESTARTS {
        let closed = extend(apply, &mut basis, &mut h, kept, m);
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

/// sum conj(a_i) b_i.
fn dot<T: Scalar>(a: &[T], b: &[T]) -> T {
    a.iter()
        .zip(b)
        .fold(T::ZERO, |sum, (x, y)| sum + x.conjugate() * *y)
}

fn norm<T: Scalar>(a: &[T]) -> f64 {
    a.iter()
        .fold(0.0, |sum, x| sum + x.modulus() * x.modulus())
        .sqrt()
}

/// Arnoldi steps from column `from` to `m` (twice-orthogonalised Gram-Schmidt against the whole
/// basis), `basis` holding `from + 1` orthonormal vectors and `h` the projection so far; true
/// when the Krylov space closed (an invariant subspace: the basis stops short).
fn extend<T: Scalar>(
    apply: &dyn Fn(&[T]) -> Vec<T>,
    basis: &mut Vec<Vec<T>>,
    h: &mut Mat<T>,
    from: usize,
    m: usize,
) -> bool {
    for j in from..m {
        let mut w = apply(&basis[j]);
        for _ in 0..2 {
            for (i, v) in basis.iter().enumerate() {
                let c = dot(v, &w);
                w.iter_mut().zip(v).for_each(|(a, b)| *a -= c * *b);
                h[(i, j)] += c;
            }
        }
        let len = norm(&w);
        h[(j + 1, j)] = T::real(len);
        if len < 1e-300 {
            return true;
        }
        let len = T::real(len);
        basis.push(w.iter().map(|x| *x / len).collect());
    }
    false
}

/// Restart on the Ritz vectors `ys` (coefficients over the first `k` basis vectors),
/// orthonormalised, and the residual direction (basis vector `k`): the new basis holds them,
/// the new projection their Rayleigh quotient and the residual's coupling row, and Arnoldi
/// continues from the residual direction. Returns the number of Ritz vectors kept.
fn restart<T: Scalar>(basis: &mut Vec<Vec<T>>, h: &mut Mat<T>, ys: &[Vec<T>], k: usize) -> usize {
    // Orthonormalise the coefficient vectors (modified Gram-Schmidt, twice), dropping any that
    // depend on the others.
    let mut q: Vec<Vec<T>> = Vec::new();
    for y in ys {
        let mut v = y.clone();
        for _ in 0..2 {
            for u in &q {
                let c = dot(u, &v);
                v.iter_mut().zip(u).for_each(|(a, b)| *a -= c * *b);
            }
        }
        let len = norm(&v);
        if len > 1e-10 {
            let len = T::real(len);
            q.push(v.iter().map(|x| *x / len).collect());
        }
    }
    let p = q.len();
    let residual = basis[k].clone();
    let tail = h[(k, k - 1)];
    // T = Q^H H Q over the first k rows and columns; b = tail * (last row of Q).
    let mut t = Mat::<T>::from_fn(p, p, |_, _| T::ZERO);
    for (a, qa) in q.iter().enumerate() {
        for (b, qb) in q.iter().enumerate() {
            let mut sum = T::ZERO;
            for r in 0..k {
                let mut row = T::ZERO;
                for c in 0..k {
                    row += h[(r, c)] * qb[c];
                }
                sum += qa[r].conjugate() * row;
            }
            t[(a, b)] = sum;
        }
    }
    let new: Vec<Vec<T>> = q.iter().map(|coef| combine(coef, basis)).collect();
    *basis = new;
    basis.push(residual);
    let (rows, cols) = (h.nrows(), h.ncols());
    *h = Mat::<T>::from_fn(rows, cols, |_, _| T::ZERO);
    for a in 0..p {
        for b in 0..p {
            h[(a, b)] = t[(a, b)];
        }
        h[(p, a)] = tail * q[a][k - 1];
    }
    p
}

/// The vector with coefficients `coef` over the first basis vectors.
fn combine<T: Scalar>(coef: &[T], basis: &[Vec<T>]) -> Vec<T> {
    let mut x = vec![T::ZERO; basis[0].len()];
    for (c, v) in coef.iter().zip(basis.iter()) {
        x.iter_mut().zip(v).for_each(|(a, b)| *a += *c * *b);
    }
    x
}

/// The Ritz pairs of the projection `h` (its first k rows and columns) over the basis (real
/// ones only for a real problem), largest magnitude first, the first `count` of them: (mu, x)
/// with x over the whole space, the coefficient vectors over the basis, and whether each has
/// converged (its Arnoldi residual `|h[k, k-1] s[k-1]|` below [`TOLERANCE`] of its value).
#[allow(clippy::type_complexity)] // pairs, their coefficients and their convergence
fn ritz<T: Scalar>(
    basis: &[Vec<T>],
    h: &Mat<T>,
    k: usize,
    count: usize,
) -> (Vec<(T, Vec<T>)>, Vec<Vec<T>>, Vec<bool>) {
    let Some((values, vectors)) = T::eigen(h, k) else {
        return (Vec::new(), Vec::new(), Vec::new());
    };
    let mut order: Vec<(usize, T)> = (0..k)
        .filter_map(|i| T::from_eigenvalue(values[i]).map(|mu| (i, mu)))
        .collect();
    order.sort_by(|a, b| values[b.0].norm().total_cmp(&values[a.0].norm()));
    order.truncate(count);
    let tail = if h.nrows() > k {
        h[(k, k - 1)].modulus()
    } else {
        0.0
    };
    let mut converged = Vec::with_capacity(order.len());
    let mut coefficients = Vec::with_capacity(order.len());
    let pairs = order
        .iter()
        .map(|&(i, mu)| {
            let s: Vec<T> = (0..k).map(|r| T::from_entry(vectors[(r, i)])).collect();
            let len = T::real(norm(&s));
            let s: Vec<T> = s.iter().map(|x| *x / len).collect();
            converged.push(tail * s[k - 1].modulus() <= TOLERANCE * mu.modulus());
            let x = combine(&s, &basis[..k]);
            coefficients.push(s);
            (mu, x)
        })
        .collect();
    (pairs, coefficients, converged)
}
