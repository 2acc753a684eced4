"""The painting benchmark's geometry (not committed: run this first), next to this script:

- pillars.gds  10,000 polygons: a 100 x 100 array of octagonal pillars 80 nm across on a
               120 nm pitch, layer [1, 0], cell TOP.
- ball.stl     a sphere of radius 5 um as 327,680 triangles (an icosphere subdivided 7 times).

    python3 benches/paint/make.py
    benches/paint/run.sh target/release/yee     (each scene is 1e8 cells, one step)
"""

import math
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scenes"))
import make_geometry as mg  # noqa: E402

polys = []
for i in range(100):
    for j in range(100):
        cx, cy = -6000 + 120 * i, -6000 + 120 * j
        polys.append([(int(cx + 40 * math.cos(2 * math.pi * k / 8)), int(cy + 40 * math.sin(2 * math.pi * k / 8))) for k in range(8)])
stamp = struct.pack(">12h", 2026, 12, 5, 0, 0, 0, 2026, 12, 5, 0, 0, 0)
gds = (
    mg.gds_record(0x00, 2, struct.pack(">h", 600))
    + mg.gds_record(0x01, 2, stamp)
    + mg.gds_record(0x02, 6, b"PILLARS")
    + mg.gds_record(0x03, 5, mg.gds_real(1e-3) + mg.gds_real(1e-9))
    + mg.gds_record(0x05, 2, stamp)
    + mg.gds_record(0x06, 6, b"TOP")
    + b"".join(mg.boundary(1, p) for p in polys)
    + mg.gds_record(0x07, 0)
    + mg.gds_record(0x04, 0)
)
with open(os.path.join(HERE, "pillars.gds"), "wb") as f:
    f.write(gds)
v, faces = mg.icosphere(7)
with open(os.path.join(HERE, "ball.stl"), "wb") as f:
    f.write(b" " * 80 + struct.pack("<I", len(faces)))
    for t in faces:
        f.write(struct.pack("<3f", 0, 0, 0))
        for i in t:
            f.write(struct.pack("<3f", *(5.0 * c for c in v[i])))
        f.write(struct.pack("<H", 0))
print(f"{len(polys)} polygons, {len(faces)} triangles")
