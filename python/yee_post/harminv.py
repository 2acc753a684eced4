"""Resonances of a time series by harmonic inversion: filter diagonalization (Mandelshtam and
Taylor, J. Chem. Phys. 107, 6756 (1997); the method of Meep's harminv).

A signal c_n = c(n dt) is fitted as a sum of decaying complex exponentials,

    c(t) = sum_k d_k exp(-i 2 pi f_k t - gamma_k t),

from the modes whose frequencies lie in a window [fmin, fmax]. The window is spanned by J
basis functions (Fourier sums of the signal at J frequencies spread over it); the signal's
shift operator restricted to them is a small J x J generalized eigenproblem, U1 b = u U0 b,
whose eigenvalues u_k = exp(-i 2 pi f_k dt - gamma_k dt) give each mode's frequency and decay
and whose eigenvectors give its amplitude. Unlike a Fourier peak, the frequency is not limited
by the record's length: a few periods of a slowly decaying mode fix its frequency and Q.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Resonances", "harminv"]


@dataclass
class Resonances:
    """The modes found, sorted by frequency. Each array has one value per mode.

    ``frequency`` (Hz); ``decay`` gamma (1/s, the amplitude's decay rate: energy decays at
    2 gamma); ``Q`` = pi f / gamma (inf for a mode that does not decay); ``amplitude`` the
    complex d of exp(-i 2 pi f t - gamma t) at t = 0 (for a real signal each mode appears at
    +f with half its real amplitude: the oscillation's amplitude is 2 |d|); ``error`` a relative
    error estimate (how well the mode also fits the signal shifted by two steps; trust modes
    with a small one, as with Meep's harminv)."""

    frequency: np.ndarray
    decay: np.ndarray
    Q: np.ndarray
    amplitude: np.ndarray
    error: np.ndarray

    def __len__(self) -> int:
        return len(self.frequency)


def harminv(
    signal,
    dt: float,
    fmin: float,
    fmax: float,
    *,
    basis: int | None = None,
    max_error: float = 1e-3,
    min_amplitude: float = 1e-3,
) -> Resonances:
    """The resonances of ``signal`` (samples ``dt`` seconds apart) with frequencies in
    [``fmin``, ``fmax``] Hz.

    ``basis``: basis functions spanning the window (default: 1.1 per 1/T of the window, T half
    the record, and at least 20); more than the modes present is harmless, too few merges
    modes. Modes whose ``error`` exceeds ``max_error`` or whose amplitude is below
    ``min_amplitude`` times the largest are dropped (both as in Meep's harminv, which reports
    and then filters); pass ``max_error=inf, min_amplitude=0`` to see every eigenvalue.
    """
    c = np.asarray(signal)
    if c.ndim != 1 or len(c) < 16:
        raise ValueError(f"harminv needs a 1-D series of at least 16 samples; got shape {c.shape}")
    if not (0 <= fmin < fmax):
        raise ValueError(f"the window must have 0 <= fmin < fmax; got [{fmin}, {fmax}]")
    if fmax > 0.5 / dt:
        raise ValueError(f"fmax {fmax:g} Hz is above the Nyquist frequency {0.5 / dt:g} Hz of dt = {dt:g} s")
    c = c.astype(complex)
    m = (len(c) - 3) // 2  # sums over n, m = 0..M reach c[2M + 2], the last sample
    if basis is None:
        basis = max(20, int(np.ceil(1.1 * (fmax - fmin) * (m + 1) * dt)))
    phi = 2 * np.pi * np.linspace(fmin, fmax, basis) * dt  # basis phases per step
    n = np.arange(m + 1)
    w = np.exp(1j * np.outer(n, phi))  # W[n, j] = z_j^(-n), z_j = exp(-i phi_j)
    u = [_fdm_matrix(c, w, p, m) for p in (0, 1, 2)]
    f0 = w.T @ c[: m + 1]
    # U0 is nearly singular (the basis overlaps): solve in the span its large singular values
    # keep, as filter diagonalization does.
    inverse = np.linalg.pinv(u[0], rcond=1e-11, hermitian=False)
    values, vectors = np.linalg.eig(inverse @ u[1])
    keep = np.abs(values) > 1e-12
    values, vectors = values[keep], vectors[:, keep]
    freq, decay, amp, err = [], [], [], []
    for k, zk in enumerate(values):
        b = vectors[:, k]
        norm = b @ u[0] @ b
        if abs(norm) == 0:
            continue
        b = b / np.sqrt(norm)
        omega = 1j * np.log(zk) / dt  # z = exp(-i omega dt), omega = 2 pi f - i gamma
        freq.append(omega.real / (2 * np.pi))
        decay.append(-omega.imag)
        amp.append((b @ f0) ** 2)
        err.append(abs(b @ u[2] @ b - zk**2) / abs(zk) ** 2)
    freq, decay, amp, err = map(np.asarray, (freq, decay, amp, err))
    inside = (freq >= fmin) & (freq <= fmax)
    largest = np.abs(amp[inside]).max() if inside.any() else 0.0
    good = inside & (err <= max_error) & (np.abs(amp) >= min_amplitude * largest)
    order = np.argsort(freq[good])
    freq, decay, amp, err = (a[good][order] for a in (freq, decay, amp, err))
    with np.errstate(divide="ignore"):
        q = np.where(decay > 0, np.pi * freq / np.where(decay > 0, decay, 1.0), np.inf)
    return Resonances(frequency=freq, decay=decay, Q=q, amplitude=amp, error=err)


def _fdm_matrix(c: np.ndarray, w: np.ndarray, p: int, m: int) -> np.ndarray:
    """U^(p)[j, j'] = sum_{n, n'=0..M} z_j^-n z_j'^-n' c[n + n' + p]: the Hankel matrix of the
    signal shifted by p steps between the basis vectors W[:, j]; its product with W by FFT
    correlation (one transform per basis function), then W^T on the left."""
    segment = c[p : p + 2 * m + 1]
    size = 1 << int(np.ceil(np.log2(len(segment) + m + 1)))
    # (H W)[n, j] = sum_n' c[n + n' + p] W[n', j]: a correlation, i.e. a convolution of the
    # segment with W reversed along n', read from index M on.
    spectrum = np.fft.fft(segment, size)
    kernels = np.fft.fft(w[::-1, :], size, axis=0)
    hw = np.fft.ifft(spectrum[:, None] * kernels, axis=0)[m : 2 * m + 1, :]
    return w.T @ hw
