"""Meep reference: a 128^3 vacuum cube with a 10-cell PML, serial, double precision.

Run with the Debian package python3-meep:  /usr/bin/python3 benches/reference/meep_cube.py [N]
Prints the update rate in Mcells/s (grid points x steps / wall time of the stepping only).
"""
import sys
import time

import meep as mp

mp.verbosity(0)

n = int(sys.argv[1]) if len(sys.argv) > 1 else 128
pml = 10
sim = mp.Simulation(
    cell_size=mp.Vector3(n, n, n),
    resolution=1,
    boundary_layers=[mp.PML(pml)],
    sources=[mp.Source(mp.ContinuousSource(frequency=0.15), component=mp.Ez, center=mp.Vector3())],
    Courant=0.5,
)
sim.init_sim()
sim.run(until=2)  # warm up
steps = 0
t0 = time.perf_counter()
while time.perf_counter() - t0 < 15.0:
    sim.fields.step()
    steps += 1
dt = time.perf_counter() - t0
print(f"meep {mp.__version__ if hasattr(mp, '__version__') else ''} {n}^3 pml {pml}: {n**3 * steps / dt / 1e6:.1f} Mcells/s ({steps} steps in {dt:.1f} s)")
