"""openEMS reference: a 128^3 vacuum cube with a 10-cell PML on every face.

Run with the Debian package python3-openems:
    /usr/bin/python3 benches/reference/openems_cube.py [N] [THREADS]
openEMS reports its own update rate ("Speed: ... MC/s") at the end of the run; this script
also times the whole run. Its PML is openEMS's UPML ("PML_10").
"""
import os
import sys
import tempfile
import time

import numpy as np
from CSXCAD import ContinuousStructure
from openEMS import openEMS

n = int(sys.argv[1]) if len(sys.argv) > 1 else 128
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 300

fdtd = openEMS(NrTS=steps, EndCriteria=0)
fdtd.SetGaussExcite(3e14, 1.5e14)
fdtd.SetBoundaryCond(["PML_10"] * 6)
csx = ContinuousStructure()
fdtd.SetCSX(csx)
mesh = csx.GetGrid()
mesh.SetDeltaUnit(1e-6)
for axis in "xyz":
    mesh.AddLine(axis, np.linspace(-0.025 * n, 0.025 * n, n + 1))
exc = csx.AddExcitation("exc", exc_type=0, exc_val=[0, 0, 1])
exc.AddBox([0, 0, 0], [0, 0, 0.05])

path = tempfile.mkdtemp(prefix="openems-bench-")
t0 = time.perf_counter()
fdtd.Run(path, cleanup=True, numThreads=threads, verbose=1)
dt = time.perf_counter() - t0
print(f"openEMS {n}^3 PML_10, {threads} threads: {n**3 * steps / dt / 1e6:.1f} Mcells/s over the whole run ({steps} steps in {dt:.1f} s)")
