// The two-pass Yee update (design.md sections 2 and 3), mirroring h_plane / e_plane in
// src/backend/cpu.rs operation for operation: the same differences, the same products, the
// same order of additions, so the host build of this file matches the CPU backend bit for bit
// and a GPU build (compiled with --fmad=false) to rounding.
//
// One thread per (j, k) column (z fastest, so a warp reads consecutive addresses), marching
// over a chunk of x planes: the x neighbour read at plane p is kept in registers for plane
// p + 1, so each field value streams from memory once per half step.

#include "common.cuh"

// Hx -= ch ((Ez(y+1) - Ez) / dy + (Ey(z+1) - Ey) * (-1/dz))
// Hy -= ch ((Ez(x+1) - Ez) * (-1/dx) + (Ex(z+1) - Ex) / dz)
// Hz -= ch ((Ey(x+1) - Ey) / dx + (Ex(y+1) - Ex) * (-1/dy))
// Beyond the y or z maximum face E is the wrapped value (periodic) or zero. Plane p + 1 of the
// last owned plane is the right halo.
extern "C" __global__ void update_h(const UpdateArgs a) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= a.ny * a.nz) return;
    const int pb = a.p0 + blockIdx.y * a.chunk;
    const int pe = min(pb + a.chunk, a.p1);
    if (pb >= pe) return;
    const int j = col / a.nz;
    const int k = col - j * a.nz;
    const i64 plane = a.plane;
    // Offsets to the y + 1 and z + 1 neighbours, and whether they exist.
    const bool y_in = j + 1 < a.ny;
    const bool y_ok = y_in || a.y_hi == BEYOND_WRAP;
    const i64 dy = y_in ? (i64)a.nz : -(i64)(a.ny - 1) * a.nz;
    const bool z_in = k + 1 < a.nz;
    const bool z_ok = z_in || a.z_hi == BEYOND_WRAP;
    const i64 dz = z_in ? 1 : -(i64)(a.nz - 1);
    const real idx = a.idx, idy = a.idy, idz = a.idz, ch = a.ch;
    const real nidx = -idx, nidy = -idy, nidz = -idz;
    const real zero = 0;
    const real* __restrict__ ex = a.ex;
    const real* __restrict__ ey = a.ey;
    const real* __restrict__ ez = a.ez;
    real* __restrict__ hx = a.hx;
    real* __restrict__ hy = a.hy;
    real* __restrict__ hz = a.hz;
    i64 o = (i64)pb * plane + col;
    real ey_c = __ldg(ey + o);
    real ez_c = __ldg(ez + o);
    for (int p = pb; p < pe; ++p, o += plane) {
        const real ex_c = __ldg(ex + o);
        const real ey_xn = __ldg(ey + o + plane);
        const real ez_xn = __ldg(ez + o + plane);
        const real ez_yn = y_ok ? __ldg(ez + o + dy) : zero;
        const real ex_yn = y_ok ? __ldg(ex + o + dy) : zero;
        const real ey_zn = z_ok ? __ldg(ey + o + dz) : zero;
        const real ex_zn = z_ok ? __ldg(ex + o + dz) : zero;
        hx[o] -= ch * ((ez_yn - ez_c) * idy + (ey_zn - ey_c) * nidz);
        hy[o] -= ch * ((ez_xn - ez_c) * nidx + (ex_zn - ex_c) * idz);
        hz[o] -= ch * ((ey_xn - ey_c) * idx + (ex_yn - ex_c) * nidy);
        ey_c = ey_xn;
        ez_c = ez_xn;
    }
}

// Ex = ca Ex + cb ((Hz - Hz(y-1)) / dy + (Hy - Hy(z-1)) * (-1/dz))
// Ey = ca Ey + cb ((Hz - Hz(x-1)) * (-1/dx) + (Hx - Hx(z-1)) / dz)
// Ez = ca Ez + cb ((Hy - Hy(x-1)) / dx + (Hx - Hx(y-1)) * (-1/dy))
// with (ca, cb) = (c_ca, c_cb)[material id of the component at the cell]. Below the y or z
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
    const i64 plane = a.plane;
    // The y - 1 and z - 1 neighbours: read (inside, or wrapped), mirrored, or zero.
    const bool y_in = j > 0;
    const bool y_read = y_in || a.y_lo == BEYOND_WRAP;
    const bool y_mirror = !y_in && a.y_lo == BEYOND_MIRROR;
    const i64 dy = y_in ? -(i64)a.nz : (i64)(a.ny - 1) * a.nz;
    const bool z_in = k > 0;
    const bool z_read = z_in || a.z_lo == BEYOND_WRAP;
    const bool z_mirror = !z_in && a.z_lo == BEYOND_MIRROR;
    const i64 dz = z_in ? -1 : (i64)(a.nz - 1);
    const real idx = a.idx, idy = a.idy, idz = a.idz;
    const real nidx = -idx, nidy = -idy, nidz = -idz;
    const real zero = 0;
    const real* __restrict__ hx = a.hx;
    const real* __restrict__ hy = a.hy;
    const real* __restrict__ hz = a.hz;
    real* __restrict__ ex = a.ex;
    real* __restrict__ ey = a.ey;
    real* __restrict__ ez = a.ez;
    const u8* __restrict__ mx = a.mx;
    const u8* __restrict__ my = a.my;
    const u8* __restrict__ mz = a.mz;
    i64 o = (i64)pb * plane + col;
    real hy_xb = __ldg(hy + o - plane);
    real hz_xb = __ldg(hz + o - plane);
    for (int p = pb; p < pe; ++p, o += plane) {
        const real hx_c = __ldg(hx + o);
        const real hy_c = __ldg(hy + o);
        const real hz_c = __ldg(hz + o);
        real hz_yb, hx_yb, hy_zb, hx_zb;
        if (y_read) {
            hz_yb = __ldg(hz + o + dy);
            hx_yb = __ldg(hx + o + dy);
        } else if (y_mirror) {
            hz_yb = -hz_c;
            hx_yb = -hx_c;
        } else {
            hz_yb = zero;
            hx_yb = zero;
        }
        if (z_read) {
            hy_zb = __ldg(hy + o + dz);
            hx_zb = __ldg(hx + o + dz);
        } else if (z_mirror) {
            hy_zb = -hy_c;
            hx_zb = -hx_c;
        } else {
            hy_zb = zero;
            hx_zb = zero;
        }
        const i64 m = o - plane;
        const int id0 = __ldg(mx + m), id1 = __ldg(my + m), id2 = __ldg(mz + m);
        ex[o] = c_ca[id0] * ex[o] + c_cb[id0] * ((hz_c - hz_yb) * idy + (hy_c - hy_zb) * nidz);
        ey[o] = c_ca[id1] * ey[o] + c_cb[id1] * ((hz_c - hz_xb) * nidx + (hx_c - hx_zb) * idz);
        ez[o] = c_ca[id2] * ez[o] + c_cb[id2] * ((hy_c - hy_xb) * idx + (hx_c - hx_yb) * nidy);
        hy_xb = hy_c;
        hz_xb = hz_c;
    }
}
