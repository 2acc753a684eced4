// The fused update (issue: faster than the two-pass roofline): one step, H^{n-1/2} -> H^{n+1/2}
// and E^n -> E^{n+1}, in one sweep, each field value read once and written once per step (12
// values per cell instead of the two-pass update's 18).
//
// One thread per (j, k) column marching over a chunk of x planes, as update_h. At plane p it
// computes the new H of its own cell, then the new E of the cell, which also needs the new H
// of its y - 1 and z - 1 neighbours (and of x - 1, carried from the previous plane). Those
// neighbours belong to other threads, which may run before or after this one, so the thread
// computes their new H itself from the old fields: the step reads old fields and psi arrays
// that nothing writes in this launch and writes new ones into other buffers (the engine swaps
// the two sets every step). The arithmetic is that of update_h, cpml_{x,y,z}_h and update_e
// (and, in update_fused_sources, of the magnetic sheets and TF/SF H corrections on every new
// H), operation for operation, so the fields are the two-pass update's bit for bit; the E CPML
// corrections and the E passes after the curl run after this kernel, as in the two-pass step.
//
// The x - 1 neighbour of the first plane of a chunk is computed likewise, except on local
// plane 0, the halo, whose new H the engine copied in before (a launch with e_too = 0 first
// writes the new H of the planes those copies read).

#include "common.cuh"

struct H3 {
    real x, y, z;
};

// The H factor of a CPML correction at field offset o of an H component with ids m (h_factor).
__device__ __forceinline__ real fused_h_factor(const FusedArgs& a, const u8* m, i64 o) {
    return a.magnetic ? c_hcb[m[o - a.plane]] : a.ch;
}

// The CPML layer of index i along an axis of n cells with lo and hi layers, or -1.
__device__ __forceinline__ int layer_of(int i, int lo, int hi, int n) {
    if (i < lo) return i;
    if (i >= n - hi) return lo + (i - (n - hi));
    return -1;
}

// The H passes after the curl that the two-pass step launches on their own, on the new H `h`
// of cell (j, k) of local plane p at field offset o: the magnetic sheets (inject_source, in
// model order), then the TF/SF corrections (tfsf_correct, in pass order), the same
// arithmetic. A cell lies in at most one face of a group, and a face's point is found from
// the cell (FusedTfsf), so no thread searches the points.
__device__ __forceinline__ void h_sources(const FusedArgs& a, int j, int k, int p, i64 o, H3& h) {
    for (int i = 0; i < a.sheets; ++i) {
        const FusedSheet& s = a.sheet[i];
        if (p >= s.p0 && p < s.p1 && j >= s.y0 && j < s.y1 && k >= s.z0 && k < s.z1) {
            const real d = a.ch * s.m;
            if (s.c == 0) {
                h.x -= d;
            } else if (s.c == 1) {
                h.y -= d;
            } else {
                h.z -= d;
            }
        }
    }
    for (int i = 0; i < a.tfsf; ++i) {
        const FusedTfsf& t = a.tfsf_face[i];
        if (p >= t.p0 && p < t.p1 && j >= t.y0 && j < t.y1 && k >= t.z0 && k < t.z1) {
            const i64 q = t.first + (i64)(p - t.p0) * t.sp + (i64)(j - t.y0) * t.sj + (i64)(k - t.z0) * t.sk;
            const unsigned n = __ldg(t.node + q);
            const real v = a.inc_e[n] + __ldg(t.w + q) * (a.inc_e[n + 1] - a.inc_e[n]);
            const u8* m = t.c == 0 ? a.hmx : (t.c == 1 ? a.hmy : a.hmz);
            const real cb = a.magnetic ? c_hcb[m[o - a.plane]] : a.ch;
            const real d = cb * (__ldg(t.fac + q) * v);
            if (t.c == 0) {
                h.x += d;
            } else if (t.c == 1) {
                h.y += d;
            } else {
                h.z += d;
            }
        }
    }
}

// H^{n+1/2} at cell (j, k) of local plane p from the old fields: update_h's curl, then the
// CPML corrections along x, y and z (cpml.cu), in that order, then with SOURCES the magnetic
// sheets and TF/SF corrections (h_sources). `own`: store the new psi values (only the thread
// of the column does).
template <bool SOURCES>
__device__ H3 h_cell(const FusedArgs& a, int j, int k, int p, bool own) {
    const real zero = 0;
    const i64 o = (i64)p * a.plane + (i64)j * a.nz + k;
    const bool y_in = j + 1 < a.ny;
    const bool y_ok = y_in || a.y_hi == BEYOND_WRAP;
    const i64 dy = y_in ? (i64)a.nz : -(i64)(a.ny - 1) * a.nz;
    const bool z_in = k + 1 < a.nz;
    const bool z_ok = z_in || a.z_hi == BEYOND_WRAP;
    const i64 dz = z_in ? 1 : -(i64)(a.nz - 1);
    const real ex = __ldg(a.ex0 + o);
    const real ey = __ldg(a.ey0 + o);
    const real ez = __ldg(a.ez0 + o);
    const real ey_xn = __ldg(a.ey0 + o + a.plane);
    const real ez_xn = __ldg(a.ez0 + o + a.plane);
    const real ez_yn = y_ok ? __ldg(a.ez0 + o + dy) : zero;
    const real ex_yn = y_ok ? __ldg(a.ex0 + o + dy) : zero;
    const real ey_zn = z_ok ? __ldg(a.ey0 + o + dz) : zero;
    const real ex_zn = z_ok ? __ldg(a.ex0 + o + dz) : zero;
    const real idx = __ldg(a.ihx + p);
    const real idy = __ldg(a.ihy + j);
    const real idz = __ldg(a.ihz + k);
    const real cx = (ez_yn - ez) * idy + (ey_zn - ey) * (-idz);
    const real cy = (ez_xn - ez) * (-idx) + (ex_zn - ex) * idz;
    const real cz = (ey_xn - ey) * idx + (ex_yn - ex) * (-idy);
    H3 h;
    if (a.magnetic) {
        const i64 m = o - a.plane;
        const int i0 = __ldg(a.hmx + m), i1 = __ldg(a.hmy + m), i2 = __ldg(a.hmz + m);
        h.x = c_hca[i0] * __ldg(a.hx0 + o) - c_hcb[i0] * cx;
        h.y = c_hca[i1] * __ldg(a.hy0 + o) - c_hcb[i1] * cy;
        h.z = c_hca[i2] * __ldg(a.hz0 + o) - c_hcb[i2] * cz;
    } else {
        const real ch = a.ch;
        h.x = __ldg(a.hx0 + o) - ch * cx;
        h.y = __ldg(a.hy0 + o) - ch * cy;
        h.z = __ldg(a.hz0 + o) - ch * cz;
    }
    // x layers (cpml_x_h): psi plane q counts the slab's layer planes, lo ones first.
    const int gx = a.x0 + p - 1;
    const int lx = layer_of(gx, a.xlo, a.xhi, a.nx);
    if (lx >= 0) {
        const int nlo = min(max(a.xlo - a.x0, 0), a.n);
        const int q = gx < a.xlo ? gx - a.x0 : nlo + gx - max(a.x0, a.nx - a.xhi);
        const real* cf = a.coef_x + 4 * lx;
        const real b = cf[0], c = cf[1], k1 = cf[2], inv = cf[3];
        const i64 s = (i64)q * a.plane + (i64)j * a.nz + k;
        const real d_ez = (ez_xn - ez) * inv;
        const real psi0 = b * a.psix0[s] + c * d_ez;
        h.y += fused_h_factor(a, a.hmy, o) * (k1 * d_ez + psi0);
        const real d_ey = (ey_xn - ey) * inv;
        const real psi1 = b * a.psix1[s] + c * d_ey;
        h.z -= fused_h_factor(a, a.hmz, o) * (k1 * d_ey + psi1);
        if (own) {
            a.psix0_new[s] = psi0;
            a.psix1_new[s] = psi1;
        }
    }
    // y layers (cpml_y_h): E beyond the maximum face is zero.
    const int ly = layer_of(j, a.ylo, a.yhi, a.ny);
    if (ly >= 0) {
        const int nl = a.ylo + a.yhi;
        const real* cf = a.coef_y + 4 * ly;
        const real b = cf[0], c = cf[1], k1 = cf[2], inv = cf[3];
        const i64 s = ((i64)(p - 1) * nl + ly) * a.nz + k;
        const real ez_n = y_in ? __ldg(a.ez0 + o + a.nz) : zero;
        const real ex_n = y_in ? __ldg(a.ex0 + o + a.nz) : zero;
        const real d_ez = (ez_n - ez) * inv;
        const real psi0 = b * a.psiy0[s] + c * d_ez;
        h.x -= fused_h_factor(a, a.hmx, o) * (k1 * d_ez + psi0);
        const real d_ex = (ex_n - ex) * inv;
        const real psi1 = b * a.psiy1[s] + c * d_ex;
        h.z += fused_h_factor(a, a.hmz, o) * (k1 * d_ex + psi1);
        if (own) {
            a.psiy0_new[s] = psi0;
            a.psiy1_new[s] = psi1;
        }
    }
    // z layers (cpml_z_h).
    const int lz = layer_of(k, a.zlo, a.zhi, a.nz);
    if (lz >= 0) {
        const int nl = a.zlo + a.zhi;
        const real* cf = a.coef_z + 4 * lz;
        const real b = cf[0], c = cf[1], k1 = cf[2], inv = cf[3];
        const i64 s = ((i64)(p - 1) * a.ny + j) * nl + lz;
        const real ey_n = z_in ? __ldg(a.ey0 + o + 1) : zero;
        const real ex_n = z_in ? __ldg(a.ex0 + o + 1) : zero;
        const real d_ey = (ey_n - ey) * inv;
        const real psi0 = b * a.psiz0[s] + c * d_ey;
        h.x += fused_h_factor(a, a.hmx, o) * (k1 * d_ey + psi0);
        const real d_ex = (ex_n - ex) * inv;
        const real psi1 = b * a.psiz1[s] + c * d_ex;
        h.y -= fused_h_factor(a, a.hmy, o) * (k1 * d_ex + psi1);
        if (own) {
            a.psiz0_new[s] = psi0;
            a.psiz1_new[s] = psi1;
        }
    }
    if (SOURCES) h_sources(a, j, k, p, o, h);
    return h;
}

// Tuning only (YEE_CUDA_FUSED_MAXREG=N, compiled in as YEE_FUSED_MAXREG): at most N registers
// per thread for the fused kernels, trading spills for occupancy. They hold far more live
// values than update_e (about 110 registers in f32 against 64), so an SM runs fewer of their
// warps to hide memory latency. Never defined in the host build.
#ifdef YEE_FUSED_MAXREG
#define YEE_FUSED_REGISTERS __maxnreg__(YEE_FUSED_MAXREG)
#else
#define YEE_FUSED_REGISTERS
#endif

// One step over planes [p0, p1) (chunks as update_h), J consecutive y rows per thread (J = 1:
// update_fused, one thread per column; 2: update_fused_strip2, 4: update_fused_strip4;
// YEE_CUDA_FUSED_STRIP, tuning): the thread of strip s and column k updates rows j = s J ..
// s J + J - 1 of that column, plane by plane. A row's new E needs the
// new H of the row below it, which for every row but the strip's first is the H the thread has
// just computed for that row, so per cell the thread computes its own H, its z - 1
// neighbour's, and its y - 1 neighbour's only on the first row: 2 + 1/J H updates instead of 3,
// and 1/J of the reads of the row below, which belongs to another warp. J must divide ny (the
// engine takes a smaller J where it does not): a partial last strip's exit from the unrolled
// rows cost ptxas 30 to 80 more registers per thread. The E update is update_e's: below the y
// or z minimum face H is the wrapped value (periodic), minus the cell's own (PMC mirror), or
// zero.
template <int J, bool SOURCES>
__device__ __forceinline__ void fused_strip(const FusedArgs& a) {
    const int strips = (a.ny + J - 1) / J;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= strips * a.nz) return;
    const int js = col / a.nz;
    const int k = col - js * a.nz;
    const int j0 = js * J;
    const int pb = a.p0 + blockIdx.y * a.chunk;
    const int pe = min(pb + a.chunk, a.p1);
    if (pb >= pe) return;
    const real zero = 0;
    // Below the strip's first row: inside, wrapped, mirrored or zero.
    const bool y_in = j0 > 0;
    const bool y_read = y_in || a.y_lo == BEYOND_WRAP;
    const bool y_mirror = !y_in && a.y_lo == BEYOND_MIRROR;
    const int jm = y_in ? j0 - 1 : a.ny - 1;
    const bool z_in = k > 0;
    const bool z_read = z_in || a.z_lo == BEYOND_WRAP;
    const bool z_mirror = !z_in && a.z_lo == BEYOND_MIRROR;
    const int km = z_in ? k - 1 : a.nz - 1;
    const real idz = __ldg(a.iez + k);
    real idy[J];
#pragma unroll
    for (int r = 0; r < J; ++r) idy[r] = __ldg(a.iey + j0 + r);
    i64 o_p = (i64)pb * a.plane + (i64)j0 * a.nz + k;  // row j0 of plane p
    // Per row: the new Hy, Hz at x - 1 of the first plane: computed, or on plane 0 the halo
    // copied in.
    real hy_xb[J], hz_xb[J];
#pragma unroll
    for (int r = 0; r < J; ++r) {
        hy_xb[r] = zero;
        hz_xb[r] = zero;
        if (a.e_too) {
            if (pb > 1) {
                const H3 h = h_cell<SOURCES>(a, j0 + r, k, pb - 1, false);
                hy_xb[r] = h.y;
                hz_xb[r] = h.z;
            } else {
                const i64 o = o_p + (i64)r * a.nz;
                hy_xb[r] = a.hy[o - a.plane];
                hz_xb[r] = a.hz[o - a.plane];
            }
        }
    }
    for (int p = pb; p < pe; ++p, o_p += a.plane) {
        H3 below;  // the new H of the row below the current one
#pragma unroll
        for (int r = 0; r < J; ++r) {
            const int j = j0 + r;
            const i64 o = o_p + (i64)r * a.nz;
            const H3 h = h_cell<SOURCES>(a, j, k, p, true);
            a.hx[o] = h.x;
            a.hy[o] = h.y;
            a.hz[o] = h.z;
            if (!a.e_too) continue;
            real hz_yb = zero, hx_yb = zero, hy_zb = zero, hx_zb = zero;
            if (r > 0) {
                hz_yb = below.z;
                hx_yb = below.x;
            } else if (y_read) {
                const H3 n = h_cell<SOURCES>(a, jm, k, p, false);
                hz_yb = n.z;
                hx_yb = n.x;
            } else if (y_mirror) {
                hz_yb = -h.z;
                hx_yb = -h.x;
            }
            if (z_read) {
                const H3 n = h_cell<SOURCES>(a, j, km, p, false);
                hy_zb = n.y;
                hx_zb = n.x;
            } else if (z_mirror) {
                hy_zb = -h.y;
                hx_zb = -h.x;
            }
            const i64 m = o - a.plane;
            const int i0 = __ldg(a.mx + m), i1 = __ldg(a.my + m), i2 = __ldg(a.mz + m);
            const real idx = __ldg(a.iex + p);
            a.ex[o] = c_ca[i0] * __ldg(a.ex0 + o) + c_cb[i0] * ((h.z - hz_yb) * idy[r] + (h.y - hy_zb) * (-idz));
            a.ey[o] = c_ca[i1] * __ldg(a.ey0 + o) + c_cb[i1] * ((h.z - hz_xb[r]) * (-idx) + (h.x - hx_zb) * idz);
            a.ez[o] = c_ca[i2] * __ldg(a.ez0 + o) + c_cb[i2] * ((h.y - hy_xb[r]) * idx + (h.x - hx_yb) * (-idy[r]));
            hy_xb[r] = h.y;
            hz_xb[r] = h.z;
            below = h;
        }
    }
}

extern "C" __global__ void YEE_FUSED_REGISTERS update_fused(const FusedArgs a) {
    fused_strip<1, false>(a);
}

extern "C" __global__ void YEE_FUSED_REGISTERS update_fused_strip2(const FusedArgs a) {
    fused_strip<2, false>(a);
}

extern "C" __global__ void YEE_FUSED_REGISTERS update_fused_strip4(const FusedArgs a) {
    fused_strip<4, false>(a);
}

// update_fused with the magnetic sheets and TF/SF faces of the slab applied to every new H it
// computes (h_sources): the kernel of a slab that has any, so that the others keep the
// registers of the plain one.
extern "C" __global__ void YEE_FUSED_REGISTERS update_fused_sources(const FusedArgs a) {
    fused_strip<1, true>(a);
}

// update_fused_tiled: the same step in 2-D blocks of TILE_Z z by blockDim.y y columns that
// share the new H of each plane. Per plane every thread computes the new H of its own cell
// into shared memory (the block's first row also the row below it, y - 1; and lane r of its
// second row that of row r's cell in the column before the block, z - 1: the only H the
// block recomputes), then after a barrier the new E of its cell from shared memory. So a
// cell's H is computed about (1 + 1/ny_block + 1/32) times instead of three, and each field
// value still comes from memory once per step. A row of 32 z is one warp: the z - 1 column
// is one warp's extra work, not one lane's in every warp (which would hold each warp for a
// whole H update with one lane busy).
// Written as phases (begin, h, e) that the GPU kernel runs with a barrier after each and the
// host launcher runs thread by thread (host_launch.h), so the host build is the same code.

#define TILE_Z 32
#define TILE_Y_MAX 32
#define TILE_W (TILE_Z + 1)

// The new H of one plane over the block's columns and their y - 1 row and z - 1 column:
// entry (ty + 1) TILE_W + tz + 1 for thread (tz, ty).
struct update_fused_tiled_shared {
    real hx[(TILE_Y_MAX + 1) * TILE_W];
    real hy[(TILE_Y_MAX + 1) * TILE_W];
    real hz[(TILE_Y_MAX + 1) * TILE_W];
};

// What a thread keeps from one phase to the next.
struct update_fused_tiled_thread {
    int j, k;
    bool in;                       // the column is inside the plane
    bool y_read, y_mirror, z_read, z_mirror;
    int jm;                        // the y - 1 row (wrapped at a periodic face)
    real hy_xb, hz_xb;             // new Hy, Hz at x - 1
    H3 h;                          // new H of this plane's cell
    // Lane r of the block's second row: the new H of row r in the column before the block
    // (row halo_j, column halo_k), when that column is read (inside or wrapped).
    bool halo;
    int halo_j, halo_k;
};

// The block's plane range [pb, pe) (empty past the last plane).
__device__ __forceinline__ void update_fused_tiled_planes(const FusedArgs& a, int* pb, int* pe) {
    *pb = a.p0 + blockIdx.y * a.chunk;
    *pe = min(*pb + a.chunk, a.p1);
    if (*pe < *pb) *pe = *pb;
}

__device__ __forceinline__ void update_fused_tiled_begin(const FusedArgs& a, update_fused_tiled_thread& t,
                                                         int pb) {
    const int tz = blockIdx.x % a.tiles_z, ty = blockIdx.x / a.tiles_z;
    t.k = tz * blockDim.x + threadIdx.x;
    t.j = ty * blockDim.y + threadIdx.y;
    t.in = t.j < a.ny && t.k < a.nz;
    const bool y_in = t.j > 0;
    t.y_read = y_in || a.y_lo == BEYOND_WRAP;
    t.y_mirror = !y_in && a.y_lo == BEYOND_MIRROR;
    t.jm = y_in ? t.j - 1 : a.ny - 1;
    const bool z_in = t.k > 0;
    t.z_read = z_in || a.z_lo == BEYOND_WRAP;
    t.z_mirror = !z_in && a.z_lo == BEYOND_MIRROR;
    t.hy_xb = 0;
    t.hz_xb = 0;
    const int k0 = tz * blockDim.x;  // the block's first column
    t.halo_j = ty * blockDim.y + threadIdx.x;
    t.halo_k = k0 > 0 ? k0 - 1 : a.nz - 1;
    t.halo = threadIdx.y == 1 && threadIdx.x < blockDim.y && t.halo_j < a.ny &&
             (k0 > 0 || a.z_lo == BEYOND_WRAP);
    if (!t.in || pb >= a.p1) return;
    if (pb > 1) {
        const H3 h = h_cell<false>(a, t.j, t.k, pb - 1, false);
        t.hy_xb = h.y;
        t.hz_xb = h.z;
    } else {
        const i64 o = (i64)(pb - 1) * a.plane + (i64)t.j * a.nz + t.k;
        t.hy_xb = a.hy[o];
        t.hz_xb = a.hz[o];
    }
}

// Phase 1 of plane p: the new H of the thread's cell (stored, and into shared memory), for
// the block's first row that of the cell below it, and for the halo lanes that of their row's
// cell before the block.
__device__ __forceinline__ void update_fused_tiled_h(const FusedArgs& a, update_fused_tiled_shared& sh,
                                                     update_fused_tiled_thread& t, int p) {
    if (t.halo) {
        // Entry (r + 1) TILE_W: row r, the column before thread (0, r)'s.
        const H3 n = h_cell<false>(a, t.halo_j, t.halo_k, p, false);
        const int s = (threadIdx.x + 1) * TILE_W;
        sh.hx[s] = n.x;
        sh.hy[s] = n.y;
    }
    if (!t.in) return;
    const int s = (threadIdx.y + 1) * TILE_W + threadIdx.x + 1;
    const i64 o = (i64)p * a.plane + (i64)t.j * a.nz + t.k;
    t.h = h_cell<false>(a, t.j, t.k, p, true);
    a.hx[o] = t.h.x;
    a.hy[o] = t.h.y;
    a.hz[o] = t.h.z;
    sh.hx[s] = t.h.x;
    sh.hy[s] = t.h.y;
    sh.hz[s] = t.h.z;
    if (threadIdx.y == 0 && t.y_read) {
        const H3 n = h_cell<false>(a, t.jm, t.k, p, false);
        sh.hx[s - TILE_W] = n.x;
        sh.hz[s - TILE_W] = n.z;
    }
}

// Phase 2 of plane p: the new E of the thread's cell (update_e's equations).
__device__ __forceinline__ void update_fused_tiled_e(const FusedArgs& a, const update_fused_tiled_shared& sh,
                                                     update_fused_tiled_thread& t, int p) {
    if (!t.in) return;
    const real zero = 0;
    const int s = (threadIdx.y + 1) * TILE_W + threadIdx.x + 1;
    const i64 o = (i64)p * a.plane + (i64)t.j * a.nz + t.k;
    const H3 h = t.h;
    real hz_yb = zero, hx_yb = zero, hy_zb = zero, hx_zb = zero;
    if (t.y_read) {
        hz_yb = sh.hz[s - TILE_W];
        hx_yb = sh.hx[s - TILE_W];
    } else if (t.y_mirror) {
        hz_yb = -h.z;
        hx_yb = -h.x;
    }
    if (t.z_read) {
        hy_zb = sh.hy[s - 1];
        hx_zb = sh.hx[s - 1];
    } else if (t.z_mirror) {
        hy_zb = -h.y;
        hx_zb = -h.x;
    }
    const i64 m = o - a.plane;
    const int i0 = __ldg(a.mx + m), i1 = __ldg(a.my + m), i2 = __ldg(a.mz + m);
    const real idx = __ldg(a.iex + p);
    const real idy = __ldg(a.iey + t.j);
    const real idz = __ldg(a.iez + t.k);
    a.ex[o] = c_ca[i0] * __ldg(a.ex0 + o) + c_cb[i0] * ((h.z - hz_yb) * idy + (h.y - hy_zb) * (-idz));
    a.ey[o] = c_ca[i1] * __ldg(a.ey0 + o) + c_cb[i1] * ((h.z - t.hz_xb) * (-idx) + (h.x - hx_zb) * idz);
    a.ez[o] = c_ca[i2] * __ldg(a.ez0 + o) + c_cb[i2] * ((h.y - t.hy_xb) * idx + (h.x - hx_yb) * (-idy));
    t.hy_xb = h.y;
    t.hz_xb = h.z;
}

// One step over planes [p0, p1) in chunks (update_fused), blocks of TILE_Z by blockDim.y
// (at most TILE_Y_MAX) columns; every thread reaches every barrier.
extern "C" __global__ void YEE_FUSED_REGISTERS update_fused_tiled(const FusedArgs a) {
    __shared__ update_fused_tiled_shared sh;
    update_fused_tiled_thread t;
    int pb, pe;
    update_fused_tiled_planes(a, &pb, &pe);
    update_fused_tiled_begin(a, t, pb);
    for (int p = pb; p < pe; ++p) {
        update_fused_tiled_h(a, sh, t, p);
        __syncthreads();
        update_fused_tiled_e(a, sh, t, p);
        __syncthreads();
    }
}
