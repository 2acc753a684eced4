"""Write the geometry files the import scenes read, with the Python standard library only:

- ring.gds     a silicon ring resonator of radius 1.5 um and width 0.4 um beside a straight
               bus waveguide (0.1 um gap), cell TOP, layer [1, 0], database unit 1 nm;
               the ring is one polygon with a hole, drawn as layout tools draw it (a keyhole).
- ball.stl     a closed sphere of radius 0.15 um (an icosahedron subdivided 4 times, 5120
               triangles, outward normals), binary STL in um.
- soil.npy     a 40 x 10 x 20 grid of integers for a GPR scene: 0 dry soil over 1 wet soil
               (an undulating water table), with 2 (stones) scattered through both.

    python3 scenes/make_geometry.py          (writes next to this script)

The files are committed; run this only to change them.
"""

import math
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def gds_record(rtype, dtype, data=b""):
    if len(data) % 2:
        data += b"\0"
    return struct.pack(">HBB", len(data) + 4, rtype, dtype) + data


def gds_real(x):
    """GDSII 8-byte real: sign, excess-64 base-16 exponent, 56-bit mantissa."""
    if x == 0:
        return bytes(8)
    sign, m, e = (0x80 if x < 0 else 0), abs(x), 64
    while m >= 1:
        m /= 16
        e += 1
    while m < 1 / 16:
        m *= 16
        e -= 1
    mant = int(round(m * 2**56))
    return bytes([sign | e]) + mant.to_bytes(7, "big")


def boundary(layer, points):
    xy = b"".join(struct.pack(">ii", x, y) for x, y in points + points[:1])
    return (
        gds_record(0x08, 0)
        + gds_record(0x0D, 2, struct.pack(">h", layer))
        + gds_record(0x0E, 2, struct.pack(">h", 0))
        + gds_record(0x10, 3, xy)
        + gds_record(0x11, 0)
    )


def write_ring(path):
    nm = lambda v: int(round(v * 1000))  # um to database units (1 nm)
    r, w, gap, n = 1.5, 0.4, 0.1, 360
    outer = [(nm((r + w / 2) * math.cos(2 * math.pi * k / n)), nm((r + w / 2) * math.sin(2 * math.pi * k / n))) for k in range(n)]
    inner = [(nm((r - w / 2) * math.cos(-2 * math.pi * k / n)), nm((r - w / 2) * math.sin(-2 * math.pi * k / n))) for k in range(n)]
    # Keyhole: around the outside, in along the cut at angle 0, around the hole the other
    # way, and back out along the cut.
    ring = outer + [outer[0], inner[0]] + inner[1:] + [inner[0]]
    y_bus = -(r + w / 2 + gap + w / 2)
    bus = [(nm(-3.0), nm(y_bus - w / 2)), (nm(3.0), nm(y_bus - w / 2)), (nm(3.0), nm(y_bus + w / 2)), (nm(-3.0), nm(y_bus + w / 2))]
    stamp = struct.pack(">12h", 2026, 12, 5, 0, 0, 0, 2026, 12, 5, 0, 0, 0)
    out = (
        gds_record(0x00, 2, struct.pack(">h", 600))
        + gds_record(0x01, 2, stamp)
        + gds_record(0x02, 6, b"RING")
        + gds_record(0x03, 5, gds_real(1e-3) + gds_real(1e-9))
        + gds_record(0x05, 2, stamp)
        + gds_record(0x06, 6, b"TOP")
        + boundary(1, ring)
        + boundary(1, bus)
        + gds_record(0x07, 0)
        + gds_record(0x04, 0)
    )
    with open(path, "wb") as f:
        f.write(out)


def icosphere(levels):
    t = (1 + 5**0.5) / 2
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    unit = lambda p: tuple(c / math.sqrt(sum(x * x for x in p)) for c in p)
    v = [unit(p) for p in v]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2), (10, 7, 6), (7, 1, 8),
         (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    for _ in range(levels):
        mid, nf = {}, []

        def middle(a, b):
            key = (min(a, b), max(a, b))
            if key not in mid:
                v.append(unit(tuple((v[a][i] + v[b][i]) / 2 for i in range(3))))
                mid[key] = len(v) - 1
            return mid[key]

        for a, b, c in f:
            ab, bc, ca = middle(a, b), middle(b, c), middle(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = nf
    return v, f


def write_ball(path, radius=0.15):
    v, f = icosphere(4)
    with open(path, "wb") as out:
        out.write(b"yee scenes/make_geometry.py ball".ljust(80, b" "))
        out.write(struct.pack("<I", len(f)))
        for tri in f:
            out.write(struct.pack("<3f", 0, 0, 0))
            for i in tri:
                out.write(struct.pack("<3f", *(radius * c for c in v[i])))
            out.write(struct.pack("<H", 0))


def write_soil(path, shape=(40, 10, 20)):
    nx, ny, nz = shape
    rng = random.Random(7)
    values = []
    stones = [(rng.randrange(nx), rng.randrange(ny), rng.randrange(nz)) for _ in range(30)]
    for i in range(nx):
        table = 8 + 3 * math.sin(2 * math.pi * i / nx)  # water table, in voxels from the bottom
        for j in range(ny):
            for k in range(nz):
                v = 1 if k < table else 0
                if any(abs(i - a) + abs(j - b) + abs(k - c) <= 1 for a, b, c in stones):
                    v = 2
                values.append(v)
    header = "{'descr': '|u1', 'fortran_order': False, 'shape': (%d, %d, %d), }" % shape
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(bytes(values))


if __name__ == "__main__":
    write_ring(os.path.join(HERE, "ring.gds"))
    write_ball(os.path.join(HERE, "ball.stl"))
    write_soil(os.path.join(HERE, "soil.npy"))
