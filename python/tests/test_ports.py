"""Lumped ports and elements read back by yee_post: the example circuit `scenes/lumped_rlc.toml`
run by the binary, its port and element spectra, and the port's plot."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np

from yee_post import Result, plot_port

from helpers import assert_png, run_scene

SCENE = Path(__file__).resolve().parents[2] / "scenes" / "lumped_rlc.toml"


def test_a_port_feeding_a_series_rlc_reads_back_and_plots(yee_bin, tmp_path):
    out = run_scene(yee_bin, tmp_path, "rlc", SCENE.read_text())
    with Result(out) as r:
        port = r.port("feed")
        element = r.element("rlc")
        assert port["voltage"].shape == port["current"].shape == port["time"].shape
        f = port["frequency"]
        # The closed box loses nothing: the port's accepted power is the resistor's (within
        # 1 % where the port delivers a tenth of its peak; tests/lumped.rs has the bound's why).
        strong = port["accepted_power"] > 0.1 * port["accepted_power"].max()
        ratio = element["power"][strong] / port["accepted_power"][strong]
        assert np.all(np.abs(ratio - 1) < 0.01), ratio
        # 1 - |S11|^2 is the accepted fraction of the incident power (power waves).
        accepted = 1 - np.abs(port["S11"]) ** 2
        assert np.allclose(accepted, port["accepted_power"] / port["incident_power"], rtol=1e-6)
        # S11's minimum near the series resonance, 503 MHz, shifted down a little by the
        # wire's inductance in series with the element.
        f_min = f[np.argmin(np.abs(port["S11"]))]
        assert 0.47e9 < f_min < 0.505e9, f_min
        axes = plot_port(r, "feed")
        axes[0].figure.savefig(tmp_path / "port.png", dpi=100)
    assert_png(tmp_path / "port.png", (1300, 400))


TWO_PORT = SCENE.read_text().replace(
    """[[geometry]]                    # the element across the upper gap
shape = "box"
center = [0.0, 0.0, 4.75]
size = [0.0, 0.0, 0.5]
element = { resistance = 50.0, inductance = 1.0e-7, capacitance = 1.0e-12, direction = "z", topology = "series", name = "rlc" }""",
    """[[source]]
type = "lumped_port"
name = "top"
box = { center = [0.0, 0.0, 4.75], size = [0.0, 0.0, 0.5] }
direction = "-z"
waveform = { type = "gaussian", frequency = 5.0e8, bandwidth = 8.0e8 }
frequencies = { min = 3.0e8, max = 8.0e8, count = 101 }""",
) + '\n[sparameters]\nports = ["feed", "top"]\n'


def test_two_lumped_ports_write_a_touchstone_file_scikit_rf_reads(yee_bin, tmp_path):
    import skrf

    assert "[sparameters]" in TWO_PORT and 'name = "top"' in TWO_PORT
    out = run_scene(yee_bin, tmp_path, "two", TWO_PORT)
    with Result(out) as r:
        s = r.read("sparameters/S")
    network = skrf.Network(str(tmp_path / "two.s2p"))
    assert network.s.shape == s.shape == (101, 2, 2)
    # The Touchstone file holds magnitude and angle to 9 significant digits.
    assert np.allclose(network.s, s, atol=1e-7)
    assert np.allclose(network.z0, 50.0)
    # A lossless reciprocal two-port (tests/lumped.rs says why to rounding).
    assert np.allclose(np.abs(s[:, 0, 0]) ** 2 + np.abs(s[:, 1, 0]) ** 2, 1.0, atol=1e-9)
    assert network.is_reciprocal(tol=1e-9)
