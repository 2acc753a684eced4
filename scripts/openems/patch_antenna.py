#!/usr/bin/env python3
"""openEMS reference run: the "Simple Patch Antenna" geometry of openEMS's
tutorial, rebuilt from its published dimensions, for comparison with yee.

Geometry (mm): patch 32 (x) x 40 (y), zero-thickness PEC at z = 1.524;
substrate 60 x 60 x 1.524, eps_r = 3.38, tan(delta) = 1e-3 at 2.45 GHz
(given as a conductivity); PEC ground 60 x 60 at z = 0; 50 ohm lumped
port from z = 0 to z = 1.524 at (x, y) = (-6, 0), excited along +z.
Box 200 x 200 x 150 with z in [-50, 100]; MUR (default) or PML_8 walls.
Gaussian pulse f0 = 2 GHz, fc = 1 GHz; end at -50 dB energy or 30000 steps.

Writes a JSON file holding the exact command, versions, mesh (line
coordinates in mm), timing, the port's S11 / input impedance over
1..3 GHz (401 points) and broadside far-field figures.

Needs Debian's python3-openems, i.e. run it with /usr/bin/python3:

    /usr/bin/python3 scripts/openems/patch_antenna.py --threads 2 \
        --out tests/data/openems_patch_antenna.json

Run on another solver's mesh (e.g. yee's, for a like-for-like comparison):
--mesh-from FILE.json gives the x, y, z node lines (mm, tutorial coordinates:
ground plane at z = 0) and replaces the script's own mesh exactly (no edge
lines, no smoothing); --timesteps N runs exactly N steps with the energy end
criterion disabled; --bandwidth B sets fc so that the pulse spectrum has a
full width at half maximum B (yee's `gaussian` convention); --nf2ff-box
places the far-field box; --ff-range picks the far-field frequencies:

    /usr/bin/python3 scripts/openems/patch_antenna.py --threads 2 --boundary PML_8 \
        --mesh-from MESH.json --timesteps 18057 --bandwidth 2e9 \
        --nf2ff-box -45.936105 -45.936105 -9.449685 45.936105 45.936105 29.277458 \
        --ff-range 2.30 2.50 0.05 \
        --out tests/data/openems_patch_antenna_yee_mesh.json

where MESH.json is {"x": [...], "y": [...], "z": [...]}: the node lines of a yee run of
scenes/patch_antenna.toml (its result's /grid/x, /grid/y, /grid/z, metres) in mm, with 25 mm
added to z (yee's ground plane is at z = -25 mm).
"""

import argparse
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np

# Debian's python3-openems (2019 snapshot) still uses the aliases np.float and
# np.int that numpy >= 1.24 removed; restore them before importing openEMS.
for _alias, _typ in (("float", float), ("int", int)):
    if not hasattr(np, _alias):
        setattr(np, _alias, _typ)

from CSXCAD import ContinuousStructure  # noqa: E402
from openEMS import openEMS  # noqa: E402
from openEMS.physical_constants import C0, EPS0  # noqa: E402

UNIT = 1e-3  # all lengths in mm

# ---- geometry (mm) ---------------------------------------------------------
PATCH_X = 32.0  # resonant length along x
PATCH_Y = 40.0
SUB_EPS_R = 3.38
SUB_KAPPA = 1e-3 * 2 * np.pi * 2.45e9 * EPS0 * SUB_EPS_R  # S/m
SUB_X = 60.0
SUB_Y = 60.0
SUB_H = 1.524
SUB_CELLS = 4
FEED_X = -6.0
FEED_R = 50.0
BOX = np.array([200.0, 200.0, 150.0])
Z_MIN, Z_MAX = -BOX[2] / 3, BOX[2] * 2 / 3  # -50 .. +100

# ---- excitation / run control ---------------------------------------------
F0 = 2e9
FC = 1e9
END_CRITERIA = 1e-5  # -50 dB
MAX_STEPS = 30000


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--boundary", choices=["MUR", "PML_8"], default="MUR")
    p.add_argument("--sim-path", default=os.path.join(tempfile.gettempdir(),
                                                      "openems_patch_antenna"))
    p.add_argument("--out", default="tests/data/openems_patch_antenna.json")
    p.add_argument("--mesh-from", metavar="FILE.json",
                   help="JSON object with x, y, z node lists (mm, tutorial coordinates); "
                        "used exactly as the mesh (no edge lines, no smoothing)")
    p.add_argument("--timesteps", type=int, metavar="N",
                   help="run exactly N steps with the end criterion disabled "
                        f"(default: end at {END_CRITERIA:g} energy or {MAX_STEPS} steps)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--fc", type=float, default=FC,
                   help="openEMS SetGaussExcite fc (Hz): the ~20 dB half width (default %(default)g)")
    g.add_argument("--bandwidth", type=float, metavar="HZ",
                   help="instead of --fc: spectral FWHM of the pulse (yee's `gaussian` "
                        "bandwidth); sets fc = 3 sigma_f / sqrt(2), "
                        "sigma_f = bandwidth / (2 sqrt(2 ln 2))")
    p.add_argument("--nf2ff-box", type=float, nargs=6, metavar=("X0", "Y0", "Z0", "X1", "Y1", "Z1"),
                   help="nf2ff box start and stop corners (mm, tutorial coordinates); give "
                        "mesh-line coordinates: openEMS moves other values outwards to a "
                        "line (default: CreateNF2FFBox())")
    p.add_argument("--ff-range", type=float, nargs=3, metavar=("START", "STOP", "STEP"),
                   help="far-field frequencies in GHz (the S11 minimum is always added "
                        "first); default 2.00 2.40 0.05")
    return p.parse_args()


def fc_for_bandwidth(bandwidth):
    """openEMS's Gauss pulse is cos(2 pi f0 (t-t0)) exp(-(2 pi fc (t-t0) / 3)^2), i.e. a
    Gaussian envelope of standard deviation s = 3 / (2 sqrt(2) pi fc), whose spectrum
    has standard deviation sigma_f = 1 / (2 pi s) = sqrt(2) fc / 3 (at f0 +- fc it is
    exp(-9/4), -19.5 dB). yee's `gaussian` has sigma_f = bandwidth / (2 sqrt(2 ln 2)),
    so the same envelope needs fc = 3 sigma_f / sqrt(2)."""
    sigma_f = bandwidth / (2 * np.sqrt(2 * np.log(2)))
    return 3 * sigma_f / np.sqrt(2)


def edge_lines(start, stop, dirs, metal_edge_res=None):
    """Mesh lines for the edges of a box, as openEMS's automesh intends them.

    (Debian's openEMS.AddEdges2Grid is a silent no-op: its automesh compares
    the int from GetType() with an enum using `is`, so no hint is ever made.)
    With metal_edge_res, a flat metal edge gets the "thirds rule": one line
    res/3 inside and one 2*res/3 outside the edge; otherwise a line on it.
    """
    out = {}
    for ax in dirs:
        n = "xyz".index(ax)
        lo, hi = min(start[n], stop[n]), max(start[n], stop[n])
        if metal_edge_res is not None and hi - lo > metal_edge_res:
            r = metal_edge_res
            out[ax] = [lo + r / 3, lo - 2 * r / 3, hi - r / 3, hi + 2 * r / 3]
        elif hi > lo:
            out[ax] = [lo, hi]
        else:
            out[ax] = [lo]
    return out


def add_lines(grid, hints):
    for ax, vals in hints.items():
        grid.AddLine(ax, vals)


def build(boundary, fc=FC, nr_ts=MAX_STEPS, end_criteria=END_CRITERIA, mesh=None,
          nf2ff_box=None):
    """Return (FDTD, CSX, port, nf2ff box, mesh line dict).

    mesh: None for the script's own mesh, or {"x": [...], "y": [...], "z": [...]}
    (mm), used exactly. nf2ff_box: None for CreateNF2FFBox()'s default, or
    (start, stop) in mm.
    """
    fdtd = openEMS(NrTS=nr_ts, EndCriteria=end_criteria)
    fdtd.SetGaussExcite(F0, fc)
    fdtd.SetBoundaryCond([boundary] * 6)

    csx = ContinuousStructure()
    fdtd.SetCSX(csx)
    grid = csx.GetGrid()
    grid.SetDeltaUnit(UNIT)
    max_res = C0 / (F0 + FC) / UNIT / 20  # ~5 mm in air
    own_mesh = mesh is None
    if not own_mesh:
        for ax in "xyz":
            grid.AddLine(ax, [float(v) for v in mesh[ax]])
    # the geometry's edge hints go into the mesh only when the script makes it
    hint = add_lines if own_mesh else _no_lines

    # outer box
    if own_mesh:
        grid.AddLine("x", [-BOX[0] / 2, BOX[0] / 2])
        grid.AddLine("y", [-BOX[1] / 2, BOX[1] / 2])
        grid.AddLine("z", [Z_MIN, Z_MAX])

    # patch: zero-thickness PEC; its x/y edges get the 1/3-2/3 metal-edge lines
    patch = csx.AddMetal("patch")
    p0, p1 = [-PATCH_X / 2, -PATCH_Y / 2, SUB_H], [PATCH_X / 2, PATCH_Y / 2, SUB_H]
    patch.AddBox(priority=10, start=p0, stop=p1)
    hint(grid, edge_lines(p0, p1, "xy", metal_edge_res=max_res / 2))

    # substrate (lossy dielectric)
    sub = csx.AddMaterial("substrate", epsilon=SUB_EPS_R, kappa=SUB_KAPPA)
    s0, s1 = [-SUB_X / 2, -SUB_Y / 2, 0.0], [SUB_X / 2, SUB_Y / 2, SUB_H]
    sub.AddBox(priority=0, start=s0, stop=s1)
    hint(grid, edge_lines(s0, s1, "xyz"))
    if own_mesh:
        grid.AddLine("z", np.linspace(0.0, SUB_H, SUB_CELLS + 1))

    # ground plane
    gnd = csx.AddMetal("gnd")
    g0, g1 = [-SUB_X / 2, -SUB_Y / 2, 0.0], [SUB_X / 2, SUB_Y / 2, 0.0]
    gnd.AddBox(priority=10, start=g0, stop=g1)
    hint(grid, edge_lines(g0, g1, "xy"))

    # lumped port along +z at the feed point; put a mesh line through it
    port = fdtd.AddLumpedPort(1, FEED_R, [FEED_X, 0.0, 0.0], [FEED_X, 0.0, SUB_H],
                              "z", excite=1.0, priority=5)
    if own_mesh:
        grid.AddLine("x", [FEED_X])
        grid.AddLine("y", [0.0])
        grid.SmoothMeshLines("all", max_res, 1.4)

    if nf2ff_box is None:
        nf2ff = fdtd.CreateNF2FFBox()
    else:
        nf2ff = fdtd.CreateNF2FFBox(start=list(nf2ff_box[0]), stop=list(nf2ff_box[1]))
    lines = {ax: [float(v) for v in np.asarray(grid.GetLines(ax))] for ax in "xyz"}
    if not own_mesh:
        for ax in "xyz":
            want = np.sort(np.asarray(mesh[ax], dtype=float))
            got = np.asarray(lines[ax])
            if len(got) != len(want) or np.max(np.abs(got - want)) > 1e-9:
                raise SystemExit(f"mesh {ax}: openEMS holds {len(got)} lines, "
                                 f"the file {len(want)}; they differ")
        # the port, ground, substrate and patch must sit on mesh lines
        need = {"x": [FEED_X, -PATCH_X / 2, PATCH_X / 2, -SUB_X / 2, SUB_X / 2],
                "y": [0.0, -PATCH_Y / 2, PATCH_Y / 2, -SUB_Y / 2, SUB_Y / 2],
                "z": [0.0, SUB_H]}
        for ax, vals in need.items():
            for v in vals:
                if np.min(np.abs(np.asarray(lines[ax]) - v)) > 1e-6:
                    print(f"warning: no {ax} mesh line at {v} mm", file=sys.stderr)
    return fdtd, csx, port, nf2ff, lines


def _no_lines(grid, hints):
    pass


def run_captured(fdtd, sim_path, threads, log_path):
    """Run openEMS with its C++ stdout/stderr sent to log_path; return (wall s, log)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_path, "w") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            t0 = time.perf_counter()
            cwd = os.getcwd()
            fdtd.Run(sim_path, cleanup=True, numThreads=threads)
            wall = time.perf_counter() - t0
            os.chdir(cwd)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
    with open(log_path) as f:
        text = f.read()
    return wall, text


def parse_log(text):
    info = {}
    m = re.findall(r"Time for (\d+) iterations with ([\d.]+) cells\s*:\s*([\d.eE+-]+)", text)
    if m:
        info["timesteps"] = int(m[-1][0])
        info["cells_log"] = int(float(m[-1][1]))
        info["engine_time_s"] = float(m[-1][2])
    m = re.findall(r"Energy: ~[\d.eE+-]+ \(\s*-\s*([\d.]+)dB\)", text)
    if m:
        info["energy_db"] = -float(m[-1])
    m = re.findall(r"FDTD timestep is:\s*([\d.]+e[+-]?\d+)", text)
    if m:
        info["dt"] = float(m[-1])
    m = re.findall(r"Excitation signal length is:\s*(\d+) timesteps", text)
    if m:
        info["excitation_steps"] = int(m[-1])
    return info


def nf2ff_dump_planes(sim_path, e_file):
    """Where openEMS recorded the nf2ff E fields: {axis: [min, max]} in mm over the
    six faces' HDF5 dumps (their /Mesh datasets, float32 in m), or None if they
    cannot be read."""
    try:
        import h5py
    except ImportError:
        return None
    lo, hi = {}, {}
    try:
        for name in sorted(os.listdir(sim_path)):
            if not (name.startswith(e_file) and name.endswith(".h5")):
                continue
            with h5py.File(os.path.join(sim_path, name), "r") as f:
                for ax in "xyz":
                    v = np.asarray(f["Mesh"][ax], dtype=float) / UNIT  # stored in m
                    lo[ax] = min(lo.get(ax, np.inf), float(v.min()))
                    hi[ax] = max(hi.get(ax, -np.inf), float(v.max()))
    except (OSError, KeyError):
        return None
    if not lo:
        return None
    return {ax: [round(lo[ax], 4), round(hi[ax], 4)] for ax in "xyz"}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def openems_version():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "openems"],
                             capture_output=True, text=True, check=True).stdout
        return out.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    args = parse_args()
    command = shlex.join([sys.executable] + sys.argv)
    cwd = os.getcwd()
    out_path = os.path.abspath(args.out)  # openEMS's Run() chdirs into sim_path
    sim_path = os.path.abspath(args.sim_path)
    os.makedirs(os.path.dirname(sim_path) or ".", exist_ok=True)

    fc = fc_for_bandwidth(args.bandwidth) if args.bandwidth else args.fc
    mesh = None
    if args.mesh_from:
        with open(args.mesh_from) as f:
            mesh = json.load(f)
    nf2ff_box = None
    if args.nf2ff_box:
        nf2ff_box = (list(args.nf2ff_box[:3]), list(args.nf2ff_box[3:]))
    if args.timesteps:
        nr_ts, end_criteria = args.timesteps, 0.0  # energy never falls to 0: run all N
    else:
        nr_ts, end_criteria = MAX_STEPS, END_CRITERIA
    print(f"Gauss excitation f0 = {F0:g} Hz, fc = {fc:.6g} Hz; NrTS = {nr_ts}, "
          f"EndCriteria = {end_criteria:g}")

    fdtd, csx, port, nf2ff, lines = build(args.boundary, fc=fc, nr_ts=nr_ts,
                                          end_criteria=end_criteria, mesh=mesh,
                                          nf2ff_box=nf2ff_box)
    n_lines = {ax: len(v) for ax, v in lines.items()}
    n_cells = int(np.prod([n - 1 for n in n_lines.values()]))
    print(f"mesh lines x/y/z: {n_lines['x']} {n_lines['y']} {n_lines['z']}  cells: {n_cells}")
    for ax in "xyz":
        d = np.diff(lines[ax])
        print(f"  {ax}: {lines[ax][0]:.3f} .. {lines[ax][-1]:.3f} mm, "
              f"cell {d.min():.4f} .. {d.max():.4f} mm")

    load_before = os.getloadavg()
    log_path = sim_path.rstrip("/") + ".log"
    print(f"running openEMS ({args.threads} threads, {args.boundary}) in {sim_path} ...",
          flush=True)
    fdtd_wall, log = run_captured(fdtd, sim_path, args.threads, log_path)
    load_after = os.getloadavg()
    info = parse_log(log)
    nf2ff_planes = nf2ff_dump_planes(sim_path, nf2ff.e_file)
    print(f"FDTD wall time: {fdtd_wall:.1f} s; log: {log_path}")
    print(f"timesteps: {info.get('timesteps')}  dt: {info.get('dt')}  "
          f"cells (openEMS): {info.get('cells_log')}  last energy: {info.get('energy_db')} dB")

    # ---- post-processing --------------------------------------------------
    t0 = time.perf_counter()
    freq = np.linspace(1e9, 3e9, 401)
    port.CalcPort(sim_path, freq)  # Z_ref = 50 ohm (the port's R)
    s11 = port.uf_ref / port.uf_inc
    zin = port.uf_tot / port.if_tot
    s11_db = 20 * np.log10(np.abs(s11))
    i_min = int(np.argmin(s11_db))
    f_res = float(freq[i_min])
    print(f"S11 minimum: {s11_db[i_min]:.2f} dB at {f_res / 1e9:.3f} GHz; "
          f"Zin there {zin[i_min].real:.1f}{zin[i_min].imag:+.1f}j ohm")

    ff0, ff1, ffd = args.ff_range if args.ff_range else (2.0, 2.4, 0.05)
    ff_freq = np.concatenate([[f_res], np.round(np.arange(ff0, ff1 + ffd / 100, ffd), 4) * 1e9])
    # incident / accepted power at the far-field frequencies, same DFT as S11
    port.CalcPort(sim_path, ff_freq)
    p_inc = np.asarray(port.P_inc, dtype=float)
    p_acc = np.asarray(port.P_acc, dtype=float)

    # broadside only (theta = 0, phi = 0 and 90 are the same direction); Prad is
    # the total radiated power, integrated over the nf2ff box by openEMS.
    theta = [0.0]
    phi = [0.0, 90.0]
    res = nf2ff.CalcNF2FF(sim_path, ff_freq, theta, phi, center=[0, 0, 1e-3])
    prad = np.asarray(res.Prad, dtype=float)
    r = float(np.asarray(res.r).ravel()[0])
    # directivity at broadside from the radiated power density there
    d_bs = np.array([4 * np.pi * r ** 2 * float(np.asarray(res.P_rad[n])[0, 0]) / prad[n]
                     for n in range(len(ff_freq))])
    dmax = np.asarray(res.Dmax, dtype=float)
    gain_real = d_bs * prad / p_inc
    eff_rad = prad / p_acc
    post_wall = time.perf_counter() - t0

    print(" f/GHz   D_bs/dBi  Dmax/dBi  G_real/dBi  eta_rad  Prad/Pinc")
    for n, f in enumerate(ff_freq):
        print(f" {f / 1e9:6.3f}  {10 * np.log10(d_bs[n]):8.3f}  {10 * np.log10(dmax[n]):8.3f}"
              f"  {10 * np.log10(gain_real[n]):10.3f}  {eff_rad[n]:7.4f}  {prad[n] / p_inc[n]:.4f}")
    print(f"post-processing wall time: {post_wall:.1f} s")

    excitation = {"type": "gauss", "f0_hz": F0, "fc_hz": fc,
                  "length_steps": info.get("excitation_steps"),
                  "signal": "cos(2 pi f0 (t - t0)) exp(-(2 pi fc (t - t0) / 3)^2), "
                            "t0 = 9 / (2 pi fc)"}
    if args.bandwidth:
        excitation["bandwidth_fwhm_hz"] = args.bandwidth
        excitation["sigma_f_hz"] = args.bandwidth / (2 * np.sqrt(2 * np.log(2)))
        excitation["note"] = ("fc = 3 sigma_f / sqrt(2): the same Gaussian spectral envelope "
                              "(FWHM = bandwidth) as yee's `gaussian` waveform "
                              "exp(-(t-t0)^2/(2 s^2)) sin(2 pi f0 (t-t0)), s = 1/(2 pi sigma_f); "
                              "only t0 and the carrier phase (cos vs sin) differ")
    notes = ["np.float / np.int aliases restored for Debian's openEMS python code",
             "S11 minimum is the lowest of the 401 points (5 MHz spacing)"]
    if args.mesh_from:
        notes.insert(0, "mesh taken exactly from --mesh-from (no edge lines, no smoothing); "
                        "z in the tutorial's coordinates (ground plane at z = 0)")
    else:
        notes.insert(0, "Debian's AddEdges2Grid is a no-op (enum/int `is` bug); the edge lines "
                        "(patch x/y with the 1/3-2/3 metal-edge rule at max_res/2, substrate and "
                        "ground edges, port line x=-6/y=0) are added explicitly instead")
    out = {
        "header": {
            "description": "openEMS reference for the 'Simple Patch Antenna' tutorial geometry "
                           "(patch 32 x 40 mm, substrate 60 x 60 x 1.524 mm eps_r 3.38, "
                           "50 ohm lumped port at x = -6 mm)",
            "command": command,
            "cwd": cwd,
            "script": "scripts/openems/patch_antenna.py",
            "openems_version": openems_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "boundary": args.boundary,
            "excitation": excitation,
            "end_criteria": end_criteria,
            "max_timesteps": nr_ts,
            "unit_m": UNIT,
            "substrate": {"eps_r": SUB_EPS_R, "kappa_s_per_m": SUB_KAPPA,
                          "size_mm": [SUB_X, SUB_Y, SUB_H]},
            "patch_mm": [PATCH_X, PATCH_Y],
            "feed": {"x_mm": FEED_X, "y_mm": 0.0, "z_mm": [0.0, SUB_H], "R_ohm": FEED_R},
            "box_mm": {ax: [lines[ax][0], lines[ax][-1]] for ax in "xyz"},
            "mesh_source": (os.path.abspath(args.mesh_from) if args.mesh_from
                            else "this script (edge lines + SmoothMeshLines)"),
            "mesh_lines": n_lines,
            "mesh_mm": lines,
            "cells": n_cells,
            "cells_note": "cells = product of (lines - 1); openEMS's own log counts "
                          "lines_x * lines_y * lines_z",
            "cells_openems_reported": info.get("cells_log"),
            "timesteps": info.get("timesteps"),
            "simulated_time_s": (info["timesteps"] * info["dt"]
                                 if "timesteps" in info and "dt" in info else None),
            "energy_at_end_db": info.get("energy_db"),
            "end_check_note": (f"fixed step count: EndCriteria 0, NrTS {nr_ts}"
                               if args.timesteps else
                               "this openEMS checks the end criterion only at its progress "
                               "report (every ~4 s of wall clock), so the step count (and the "
                               "last ~0.2 dB of the S11 dip) varies from run to run with load"),
            "notes": notes,
            "dt_s": info.get("dt"),
            "threads": args.threads,
            "fdtd_wall_s": round(fdtd_wall, 3),
            "openems_engine_time_s": info.get("engine_time_s"),
            "postprocess_wall_s": round(post_wall, 3),
            "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(),
            "loadavg_1_5_15_before_run": [round(x, 2) for x in load_before],
            "loadavg_1_5_15_after_run": [round(x, 2) for x in load_after],
            "nf2ff": {"box": ("openEMS CreateNF2FFBox() default (adapted to the mesh)"
                              if nf2ff_box is None else
                              {"start_mm": nf2ff_box[0], "stop_mm": nf2ff_box[1]}),
                      "recorded_planes_mm": nf2ff_planes,
                      "center_m": [0, 0, 1e-3], "theta_deg": 0.0,
                      "directivity": "4 pi r^2 S(theta=0) / Prad",
                      "realized_gain": "D * Prad / P_inc",
                      "radiation_efficiency": "Prad / P_acc"},
        },
        "s11_min_frequency_hz": f_res,
        "s11_min_db": float(s11_db[i_min]),
        "frequency": freq.tolist(),
        "s11_re": s11.real.tolist(),
        "s11_im": s11.imag.tolist(),
        "zin_re": zin.real.tolist(),
        "zin_im": zin.imag.tolist(),
        "ff_frequency": ff_freq.tolist(),
        "directivity_dbi": (10 * np.log10(d_bs)).tolist(),
        "dmax_dbi": (10 * np.log10(dmax)).tolist(),
        "realized_gain_dbi": (10 * np.log10(gain_real)).tolist(),
        "radiation_efficiency": eff_rad.tolist(),
        "p_inc_w": p_inc.tolist(),
        "p_acc_w": p_acc.tolist(),
        "p_rad_w": prad.tolist(),
    }
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
