// The two-pass Yee update (design.md sections 2 and 3), mirroring h_plane / e_plane in
// src/backend/cpu/update.rs operation for operation: the same differences, the same products,
// the same order of additions, so the host build of this file matches the CPU backend bit for
// bit, and a GPU build (compiled with --fmad=false) does too.
//
// One thread per (j, k) column (z fastest, so a warp reads consecutive addresses), marching
// over a chunk of x planes: the x neighbour read at plane p is kept in registers for plane
// p + 1, so each field value streams from memory once per half step. Every value a cell needs
// is loaded before anything is stored, and with YEE_PIPELINE (the default) the loads of plane
// p + 1 are issued before the stores of plane p: two planes of loads are in flight per thread,
// which is what it takes to cover the memory latency with 4-byte values.

#include "common.cuh"

#ifndef YEE_PIPELINE
#define YEE_PIPELINE 1
#endif

// Everything the H update of one cell reads besides Ey, Ez at the cell itself (carried over
// from the previous plane): E at the cell and its x+1, y+1, z+1 neighbours, H, and (when some
// material is magnetic) the H material ids.
struct HCell {
    real ex, ey_xn, ez_xn, ez_yn, ex_yn, ey_zn, ex_zn;
    real hx, hy, hz;
    int id0, id1, id2;
};

// The column's fixed facts: neighbour offsets and whether the neighbours exist.
struct Column {
    i64 dy, dz;
    bool y_ok, z_ok;
};

__device__ __forceinline__ HCell load_h(const UpdateArgs& a, const Column& c, i64 o) {
    const real zero = 0;
    HCell v;
    v.ex = __ldg(a.ex + o);
    v.ey_xn = __ldg(a.ey + o + a.plane);
    v.ez_xn = __ldg(a.ez + o + a.plane);
    v.ez_yn = c.y_ok ? __ldg(a.ez + o + c.dy) : zero;
    v.ex_yn = c.y_ok ? __ldg(a.ex + o + c.dy) : zero;
    v.ey_zn = c.z_ok ? __ldg(a.ey + o + c.dz) : zero;
    v.ex_zn = c.z_ok ? __ldg(a.ex + o + c.dz) : zero;
    v.hx = a.hx[o];
    v.hy = a.hy[o];
    v.hz = a.hz[o];
    if (a.magnetic) {
        const i64 m = o - a.plane;
        v.id0 = __ldg(a.hmx + m);
        v.id1 = __ldg(a.hmy + m);
        v.id2 = __ldg(a.hmz + m);
    } else {
        v.id0 = v.id1 = v.id2 = 0;
    }
    return v;
}

// Hx -= ch ((Ez(y+1) - Ez) idy + (Ey(z+1) - Ey) * (-idz))
// Hy -= ch ((Ez(x+1) - Ez) * (-idx) + (Ex(z+1) - Ex) idz)
// Hz -= ch ((Ey(x+1) - Ey) idx + (Ex(y+1) - Ex) * (-idy))
// or, when some material is magnetic, H = hca H - hcb (the same curl) with (hca, hcb) =
// (c_hca, c_hcb)[the H component's material id at the cell] (cpu/update.rs h_row: a row of
// hca = 1 takes H -= hcb curl there, the same value since 1 H = H exactly).
// The steps: idx = 1/primal x of the plane, idy, idz of the column (one load per column; the
// plane's value is the same address for every thread of a block, a broadcast).
__device__ __forceinline__ void store_h(const UpdateArgs& a, i64 o, const HCell& v, real ey_c, real ez_c,
                                        real idx, real idy, real idz) {
    const real cx = (v.ez_yn - ez_c) * idy + (v.ey_zn - ey_c) * (-idz);
    const real cy = (v.ez_xn - ez_c) * (-idx) + (v.ex_zn - v.ex) * idz;
    const real cz = (v.ey_xn - ey_c) * idx + (v.ex_yn - v.ex) * (-idy);
    real hx, hy, hz;
    if (a.magnetic) {
        hx = c_hca[v.id0] * v.hx - c_hcb[v.id0] * cx;
        hy = c_hca[v.id1] * v.hy - c_hcb[v.id1] * cy;
        hz = c_hca[v.id2] * v.hz - c_hcb[v.id2] * cz;
    } else {
        const real ch = a.ch;
        hx = v.hx - ch * cx;
        hy = v.hy - ch * cy;
        hz = v.hz - ch * cz;
    }
    a.hx[o] = hx;
    a.hy[o] = hy;
    a.hz[o] = hz;
}

// H^{n-1/2} -> H^{n+1/2} over planes [p0, p1) (see store_h for the equations). Beyond the y or
// z maximum face E is the wrapped value (periodic) or zero. Plane p + 1 of the last owned
// plane is the right halo.
extern "C" __global__ void update_h(const UpdateArgs a) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= a.ny * a.nz) return;
    const int pb = a.p0 + blockIdx.y * a.chunk;
    const int pe = min(pb + a.chunk, a.p1);
    if (pb >= pe) return;
    const int j = col / a.nz;
    const int k = col - j * a.nz;
    Column c;
    const bool y_in = j + 1 < a.ny;
    c.y_ok = y_in || a.y_hi == BEYOND_WRAP;
    c.dy = y_in ? (i64)a.nz : -(i64)(a.ny - 1) * a.nz;
    const bool z_in = k + 1 < a.nz;
    c.z_ok = z_in || a.z_hi == BEYOND_WRAP;
    c.dz = z_in ? 1 : -(i64)(a.nz - 1);
    const real idy = __ldg(a.iy + j);
    const real idz = __ldg(a.iz + k);
    i64 o = (i64)pb * a.plane + col;
    real ey_c = __ldg(a.ey + o);
    real ez_c = __ldg(a.ez + o);
#if YEE_PIPELINE
    HCell v = load_h(a, c, o);
    for (int p = pb; p < pe; ++p, o += a.plane) {
        HCell next = v;
        if (p + 1 < pe) next = load_h(a, c, o + a.plane);
        store_h(a, o, v, ey_c, ez_c, __ldg(a.ix + p), idy, idz);
        ey_c = v.ey_xn;
        ez_c = v.ez_xn;
        v = next;
    }
#else
    for (int p = pb; p < pe; ++p, o += a.plane) {
        const HCell v = load_h(a, c, o);
        store_h(a, o, v, ey_c, ez_c, __ldg(a.ix + p), idy, idz);
        ey_c = v.ey_xn;
        ez_c = v.ez_xn;
    }
#endif
}

// Everything the E update of one cell reads besides Hy, Hz at x - 1 (carried over from the
// previous plane): H at the cell and its y-1, z-1 neighbours, the material ids, and E.
struct ECell {
    real hx, hy, hz, hz_yb, hx_yb, hy_zb, hx_zb;
    int id0, id1, id2;
    real ex, ey, ez;
};

// The y - 1 and z - 1 neighbours of a column: read (inside, or wrapped), mirrored, or zero.
struct ColumnE {
    i64 dy, dz;
    bool y_read, y_mirror, z_read, z_mirror;
};

__device__ __forceinline__ ECell load_e(const UpdateArgs& a, const ColumnE& c, i64 o) {
    const real zero = 0;
    ECell v;
    v.hx = __ldg(a.hx + o);
    v.hy = __ldg(a.hy + o);
    v.hz = __ldg(a.hz + o);
    if (c.y_read) {
        v.hz_yb = __ldg(a.hz + o + c.dy);
        v.hx_yb = __ldg(a.hx + o + c.dy);
    } else if (c.y_mirror) {
        v.hz_yb = -v.hz;
        v.hx_yb = -v.hx;
    } else {
        v.hz_yb = zero;
        v.hx_yb = zero;
    }
    if (c.z_read) {
        v.hy_zb = __ldg(a.hy + o + c.dz);
        v.hx_zb = __ldg(a.hx + o + c.dz);
    } else if (c.z_mirror) {
        v.hy_zb = -v.hy;
        v.hx_zb = -v.hx;
    } else {
        v.hy_zb = zero;
        v.hx_zb = zero;
    }
    const i64 m = o - a.plane;
    v.id0 = __ldg(a.mx + m);
    v.id1 = __ldg(a.my + m);
    v.id2 = __ldg(a.mz + m);
    v.ex = a.ex[o];
    v.ey = a.ey[o];
    v.ez = a.ez[o];
    return v;
}

// Ex = ca Ex + cb ((Hz - Hz(y-1)) idy + (Hy - Hy(z-1)) * (-idz))
// Ey = ca Ey + cb ((Hz - Hz(x-1)) * (-idx) + (Hx - Hx(z-1)) idz)
// Ez = ca Ez + cb ((Hy - Hy(x-1)) idx + (Hx - Hx(y-1)) * (-idy))
// with (ca, cb) = (c_ca, c_cb)[material id of the component at the cell].
// The steps: idx = 1/dual x of the plane, idy, idz of the column (see store_h).
__device__ __forceinline__ void store_e(const UpdateArgs& a, i64 o, const ECell& v, real hy_xb, real hz_xb,
                                        real idx, real idy, real idz) {
    const real ex = c_ca[v.id0] * v.ex + c_cb[v.id0] * ((v.hz - v.hz_yb) * idy + (v.hy - v.hy_zb) * (-idz));
    const real ey = c_ca[v.id1] * v.ey + c_cb[v.id1] * ((v.hz - hz_xb) * (-idx) + (v.hx - v.hx_zb) * idz);
    const real ez = c_ca[v.id2] * v.ez + c_cb[v.id2] * ((v.hy - hy_xb) * idx + (v.hx - v.hx_yb) * (-idy));
    a.ex[o] = ex;
    a.ey[o] = ey;
    a.ez[o] = ez;
}

// E^n -> E^{n+1} over planes [p0, p1) (see store_e for the equations). Below the y or z
// minimum face H is the wrapped value (periodic), minus the cell's own value (PMC mirror), or
// zero. Plane p - 1 of the first owned plane is the left halo.
extern "C" __global__ void update_e(const UpdateArgs a) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= a.ny * a.nz) return;
    const int pb = a.p0 + blockIdx.y * a.chunk;
    const int pe = min(pb + a.chunk, a.p1);
    if (pb >= pe) return;
    const int j = col / a.nz;
    const int k = col - j * a.nz;
    ColumnE c;
    const bool y_in = j > 0;
    c.y_read = y_in || a.y_lo == BEYOND_WRAP;
    c.y_mirror = !y_in && a.y_lo == BEYOND_MIRROR;
    c.dy = y_in ? -(i64)a.nz : (i64)(a.ny - 1) * a.nz;
    const bool z_in = k > 0;
    c.z_read = z_in || a.z_lo == BEYOND_WRAP;
    c.z_mirror = !z_in && a.z_lo == BEYOND_MIRROR;
    c.dz = z_in ? -1 : (i64)(a.nz - 1);
    const real idy = __ldg(a.iy + j);
    const real idz = __ldg(a.iz + k);
    i64 o = (i64)pb * a.plane + col;
    real hy_xb = __ldg(a.hy + o - a.plane);
    real hz_xb = __ldg(a.hz + o - a.plane);
#if YEE_PIPELINE
    ECell v = load_e(a, c, o);
    for (int p = pb; p < pe; ++p, o += a.plane) {
        ECell next = v;
        if (p + 1 < pe) next = load_e(a, c, o + a.plane);
        store_e(a, o, v, hy_xb, hz_xb, __ldg(a.ix + p), idy, idz);
        hy_xb = v.hy;
        hz_xb = v.hz;
        v = next;
    }
#else
    for (int p = pb; p < pe; ++p, o += a.plane) {
        const ECell v = load_e(a, c, o);
        store_e(a, o, v, hy_xb, hz_xb, __ldg(a.ix + p), idy, idz);
        hy_xb = v.hy;
        hz_xb = v.hz;
    }
#endif
}
