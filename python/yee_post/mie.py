"""The Mie series of a homogeneous sphere: the analytic reference for scattering runs.

``efficiencies(m, x)`` gives the extinction, scattering, absorption and backscattering
efficiencies (cross-section over the geometric cross-section pi a^2) of a sphere of relative
refractive index ``m`` (complex for an absorbing sphere, e^{-i w t} convention: Im m > 0) and
size parameter ``x = 2 pi a n_medium / lambda``, from the formulas of Bohren and Huffman,
"Absorption and Scattering of Light by Small Particles" (1983), ch. 4: the coefficients

    a_n = (D_n(mx)/m + n/x) psi_n(x) - psi_{n-1}(x)
          / ((D_n(mx)/m + n/x) xi_n(x) - xi_{n-1}(x)),      b_n likewise with m D_n(mx),

with the logarithmic derivative D_n computed by downward recurrence (stable for absorbing
spheres) and the Riccati-Bessel functions psi_n, xi_n by upward recurrence, summed to
n_max = x + 4 x^(1/3) + 2 terms (Wiscombe's criterion).

Compare a yee run with it::

    from yee_post import Result
    from yee_post.mie import efficiencies
    with Result("mie_sphere.h5") as r:
        cs = r.cross_sections("scat")
    q_yee = cs["cross_section"] / (np.pi * a**2)
    q_mie = [efficiencies(1.5, 2 * np.pi * f * a / C0)["scattering"] for f in cs["frequency"]]
"""

from typing import Dict

import numpy as np


def efficiencies(m: complex, x: float) -> Dict[str, float]:
    """Efficiencies ``extinction``, ``scattering``, ``absorption``, ``backscattering`` of a
    sphere of relative index ``m`` at size parameter ``x`` (> 0)."""
    if not x > 0:
        raise ValueError(f"the size parameter must be positive, got {x}")
    m = complex(m)
    n_max = int(np.ceil(x + 4.0 * x ** (1.0 / 3.0) + 2.0))
    mx = m * x
    # D_n(mx) = psi_n'(mx) / psi_n(mx) by downward recurrence from far above n_max.
    n_start = int(max(n_max, abs(mx))) + 16
    d = np.zeros(n_start + 1, dtype=complex)
    for n in range(n_start, 0, -1):
        d[n - 1] = n / mx - 1.0 / (d[n] + n / mx)
    # Riccati-Bessel psi_n(x) = x j_n(x) and chi_n(x) = -x y_n(x), upward; xi_n = psi_n - i chi_n.
    psi_prev, psi = np.cos(x), np.sin(x)  # psi_{-1}, psi_0
    chi_prev, chi = -np.sin(x), np.cos(x)  # chi_{-1}, chi_0
    q_ext = q_sca = 0.0
    back = 0.0 + 0.0j
    for n in range(1, n_max + 1):
        psi_next = (2 * n - 1) / x * psi - psi_prev
        chi_next = (2 * n - 1) / x * chi - chi_prev
        xi_n = complex(psi_next, -chi_next)
        xi_nm1 = complex(psi, -chi)
        da = d[n] / m + n / x
        db = m * d[n] + n / x
        a_n = (da * psi_next - psi) / (da * xi_n - xi_nm1)
        b_n = (db * psi_next - psi) / (db * xi_n - xi_nm1)
        w = 2 * n + 1
        q_ext += w * (a_n + b_n).real
        q_sca += w * (abs(a_n) ** 2 + abs(b_n) ** 2)
        back += w * (-1) ** n * (a_n - b_n)
        psi_prev, psi = psi, psi_next
        chi_prev, chi = chi, chi_next
    scale = 2.0 / (x * x)
    q_ext *= scale
    q_sca *= scale
    return {
        "extinction": q_ext,
        "scattering": q_sca,
        "absorption": q_ext - q_sca,
        "backscattering": abs(back) ** 2 / (x * x),
    }
