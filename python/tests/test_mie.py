"""The Mie series of yee_post.mie against an independent implementation.

The reference values were computed with the PyPI package miepython 3.3.0
(``miepython.efficiencies_mx(m, x)``: extinction, scattering, backscattering), which is not a
test dependency; the cases cover a Rayleigh sphere, Bohren and Huffman's own example (m = 1.55,
x = 5.213), absorbing spheres and a metal-like index. The two codes agree to 1e-9 relative
(the difference is where each truncates the series), so 1e-7 catches any wrong term while
leaving room for that.
"""

import math

import pytest

from yee_post.mie import efficiencies

CASES = [
    # m, x, Q_ext, Q_sca, Q_back (miepython 3.3.0)
    (1.55, 5.213, 3.1049959150801865, 3.1049959150801865, 2.9242091271819697),
    (1.5, 0.1, 2.3084093578520527e-05, 2.3084093578520527e-05, 3.446294568400317e-05),
    (1.5 + 0.1j, 3.0, 3.0219982482769723, 2.126748707816867, 0.09714586973161601),
    (1.33 + 1e-3j, 10.0, 2.2109616338411104, 2.1663261815352666, 0.5278594929413434),
    (4 + 2j, 1.0, 3.228342572905623, 1.7003683359931403, 2.082538278882055),
    (0.2 + 3j, 2.0, 3.8094386965717564, 3.552371297464318, 2.7037701893235213),
]


@pytest.mark.parametrize("m,x,q_ext,q_sca,q_back", CASES)
def test_efficiencies_match_an_independent_code(m, x, q_ext, q_sca, q_back):
    q = efficiencies(m, x)
    assert q["extinction"] == pytest.approx(q_ext, rel=1e-7)
    assert q["scattering"] == pytest.approx(q_sca, rel=1e-7)
    assert q["backscattering"] == pytest.approx(q_back, rel=1e-7)
    assert q["absorption"] == pytest.approx(q_ext - q_sca, rel=1e-7, abs=1e-12)


def test_rayleigh_limit():
    """A small sphere scatters Q = 8/3 x^4 |(m^2 - 1)/(m^2 + 2)|^2 (to O(x^2) relative)."""
    m, x = 1.5, 0.01
    k = (m * m - 1) / (m * m + 2)
    assert efficiencies(m, x)["scattering"] == pytest.approx(8 / 3 * x**4 * k * k, rel=1e-3)
    assert efficiencies(m, x)["absorption"] == pytest.approx(0.0, abs=1e-15)


def test_bad_size_parameter():
    with pytest.raises(ValueError):
        efficiencies(1.5, 0.0)
    assert math.isfinite(efficiencies(1.5, 1e-4)["scattering"])
