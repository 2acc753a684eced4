"""Reading synthetic files: attributes, probes, spectra, snapshots, partial files, flux."""

import numpy as np
import pytest

from yee_post import STAGGER, Result, spectrum

import synthetic as syn


def test_root_attributes(synthetic_file):
    with Result(synthetic_file) as r:
        assert r.shape == syn.SHAPE
        np.testing.assert_allclose(r.cell_size, syn.CELL)
        np.testing.assert_allclose(r.origin, syn.ORIGIN)
        np.testing.assert_allclose(r.size, np.array(syn.SHAPE) * syn.CELL)
        assert r.dt == pytest.approx(syn.DT)
        assert r.steps == syn.STEPS
        assert r.complete is True
        assert r.length_unit == "um"
        assert r.attrs["precision"] == "f64"
        assert isinstance(r.attrs["scene"], str)


def test_monitors_lists_all_kinds(synthetic_file):
    with Result(synthetic_file) as r:
        m = r.monitors()
        assert m["probes"] == ["p"]
        assert m["snapshots"] == ["box", "plane_xy"]
        assert m["flux"] == ["top"]
        assert m["dft"] == ["d1"]
        assert r.components("snapshots", "plane_xy") == ["Ez", "Hz"]


def test_monitors_always_has_the_three_kinds(tmp_path):
    import h5py

    path = tmp_path / "empty.h5"
    with h5py.File(path, "w") as f:
        f.attrs["shape"] = np.array([1, 1, 1], dtype=np.uint64)
    with Result(path) as r:
        assert r.monitors() == {"probes": [], "snapshots": [], "flux": []}


def test_probe_times_carry_the_component_offset(synthetic_file):
    with Result(synthetic_file) as r:
        t_e, ez = r.probe("p", "Ez")
        t_h, hx = r.probe("p", "Hx")
    n = np.arange(syn.STEPS)
    np.testing.assert_allclose(t_e, (n + 1) * syn.DT)
    np.testing.assert_allclose(t_h, (n + 0.5) * syn.DT)
    # Values were generated at each component's own time: the returned times must match them.
    np.testing.assert_allclose(ez, syn.probe_value("Ez", t_e), atol=1e-12)
    np.testing.assert_allclose(hx, syn.probe_value("Hx", t_h), atol=1e-12)


def test_probe_position(synthetic_file):
    with Result(synthetic_file) as r:
        np.testing.assert_allclose(r.probe_position("p"), [0.1e-6, -0.05e-6, 0.02e-6])
        expected = syn.ORIGIN + (np.array([11, 6, 6]) + STAGGER["Hx"]) * syn.CELL
        np.testing.assert_allclose(r.probe_position("p", "Hx"), expected)


def test_spectrum_peak_at_signal_frequency(synthetic_file):
    with Result(synthetic_file) as r:
        f, s = r.spectrum("p", "Ez")
        f4, _ = r.spectrum("p", "Ez", pad=1)
    assert np.iscomplexobj(s)
    assert len(f) == 4 * syn.STEPS // 2 + 1  # pad=4, rfft
    assert len(f4) == syn.STEPS // 2 + 1
    np.testing.assert_allclose(f[1] - f[0], 1.0 / (4 * syn.STEPS * syn.DT))
    peak = f[np.argmax(np.abs(s))]
    # The padded bin width is 1/(4 T), about 2% of the frequency here.
    assert abs(peak - syn.PROBE_FREQ) <= f[1] - f[0]


def test_spectrum_of_gaussian_matches_fourier_transform():
    # A unit-area Gaussian pulse: its transform is exp(-2 (pi f sigma)^2) with phase from t0.
    dt, n, sigma, t0 = 1e-3, 4000, 0.02, 1.5
    t = (np.arange(n) + 1) * dt
    x = np.exp(-0.5 * ((t - t0) / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi))
    f, s = spectrum(t, x, window=None, pad=2)
    expected = np.exp(-2 * (np.pi * f * sigma) ** 2) * np.exp(-2j * np.pi * f * t0)
    np.testing.assert_allclose(s[:200], expected[:200], atol=1e-6)
    with pytest.raises(ValueError):
        spectrum(t, x, window="nope")


@pytest.mark.parametrize("name, component", [("plane_xy", "Ez"), ("plane_xy", "Hz"), ("box", "Ex")])
def test_snapshot_coordinates_match_root_attributes(synthetic_file, name, component):
    with Result(synthetic_file) as r:
        field = r.snapshot(name, component)
        ds = r.file[f"snapshots/{name}/{component}"]
        start, stride = ds.attrs["index_start"], ds.attrs["stride"]
        for a, coord in enumerate(field.coords):
            expected = r.origin[a] + (start[a] + stride[a] * np.arange(len(coord)) + STAGGER[component][a]) * r.cell_size[a]
            np.testing.assert_allclose(coord, expected, rtol=0, atol=1e-18)
        assert field.data.shape == (len(field.time),) + tuple(len(c) for c in field.coords)
        # The values are a known function of position and time: coordinates and data agree.
        expected = syn.field_value(component, field.x[None, :, None, None], field.y[None, None, :, None],
                                   field.z[None, None, None, :], field.time[:, None, None, None])
        np.testing.assert_allclose(field.data, expected, rtol=1e-12)


def test_snapshot_single_frame_and_times(synthetic_file):
    with Result(synthetic_file) as r:
        n = r.snapshot_count("plane_xy")
        assert n == syn.STEPS // syn.EVERY
        last = r.snapshot("plane_xy", "Hz", index=-1)
        first = r.snapshot("plane_xy", "Hz", index=0)
        assert last.data.shape == (20, 16, 1)
        assert last.steps == syn.STEPS
        assert last.time == pytest.approx(syn.STEPS * syn.DT - syn.DT / 2)
        assert first.steps == syn.EVERY
        np.testing.assert_allclose(last.spacing, syn.CELL)
        with pytest.raises(IndexError):
            r.snapshot("plane_xy", "Hz", index=n)


def test_missing_monitor_and_component_errors(synthetic_file):
    with Result(synthetic_file) as r:
        with pytest.raises(KeyError, match="no probes monitor 'nope'"):
            r.probe("nope", "Ez")
        with pytest.raises(KeyError, match="no component 'Ey'"):
            r.snapshot("plane_xy", "Ey")


def test_partial_file_is_read_up_to_the_last_row(partial_file):
    with Result(partial_file) as r:
        assert r.complete is False
        assert r.attrs["length_unit"] == "um"  # fixed-length bytes decoded
        t, ez = r.probe("p", "Ez")
        assert len(t) == len(ez) == 150
        t, hx = r.probe("p", "Hx")
        assert len(t) == len(hx) == 149
        assert ez.dtype == np.float32
        # Hz stopped one frame short of Ez: each component reports its own complete frames,
        # the monitor as a whole the frames every component has.
        assert r.snapshot_count("plane_xy", "Ez") == 7
        assert r.snapshot_count("plane_xy", "Hz") == 6
        assert r.snapshot_count("plane_xy") == 6
        field = r.snapshot("plane_xy", "Hz")
        assert field.data.shape[0] == len(field.time) == len(field.steps) == 6


def test_flux_and_complex_groups(synthetic_file):
    with Result(synthetic_file) as r:
        flux = r.flux("top")
        np.testing.assert_allclose(flux["frequency"], np.linspace(1e14, 3e14, 5))
        np.testing.assert_allclose(flux["power"], np.linspace(1.0, 2.0, 5))
        dft = r.monitor_data("dft", "d1")
        assert np.iscomplexobj(dft["Ez"]) and dft["Ez"].shape == (1, 3, 2)
        np.testing.assert_allclose(dft["Ez"], 1.0 - 2.0j)
        assert np.iscomplexobj(r.read("dft/d1/Ez"))
