// The Bloch pass (src/backend/cpu/bloch.rs, src/backend/bloch.rs): a Bloch cell's two field
// sets step with the plain periodic kernels, and this pass corrects the cells next to each
// Bloch face for the phase of the image their curl read across it.
//
// Per axis, the curl of the H half step reads E beyond the maximum face, and that of the E half
// step H below the minimum face, as the plain periodic image (the other end of its own set).
// The Bloch image is that value rotated by the phase, mixing the sets, so each cell next to the
// face gets
//     F[cell] += sign ((cb (cm1 own + s other)) step)
// with own and other the two sets' plain images, in the CPU's order of operations (the host
// build matches it bit for bit, and a GPU build with --fmad=false does too). Terms per axis,
// (image component, corrected component, sign), as the CPU's TERMS:
//     x: (z, y, +), (y, z, -);  y: (z, x, -), (x, z, +);  z: (y, x, +), (x, y, -).
// One launch per axis, x then y then z as on the CPU: a cell next to two faces gets both
// corrections in that order. Within a launch the two terms correct different components and a
// cell has one image per term: no thread reads what another writes.

#include "common.cuh"

// The image component and the corrected one of term `term` (0, 1) of `axis`.
__device__ __forceinline__ int bloch_source(int axis, int term) {
    return axis == 0 ? (term == 0 ? 2 : 1) : (axis == 1 ? (term == 0 ? 2 : 0) : (term == 0 ? 1 : 0));
}
__device__ __forceinline__ int bloch_target(int axis, int term) {
    return axis == 0 ? (term == 0 ? 1 : 2) : (axis == 1 ? (term == 0 ? 0 : 2) : (term == 0 ? 0 : 1));
}
// Whether the term adds its correction (else subtracts it).
__device__ __forceinline__ int bloch_adds(int axis, int term) {
    return axis == 1 ? term == 1 : term == 0;
}

__device__ __forceinline__ real* bloch_e(const BlochArgs& a, int c) {
    return c == 0 ? a.ex : (c == 1 ? a.ey : a.ez);
}
__device__ __forceinline__ real* bloch_h(const BlochArgs& a, int c) {
    return c == 0 ? a.hx : (c == 1 ? a.hy : a.hz);
}

// The offset of the image of element e (of one term) on local plane p: x, the halo plane
// beyond the face; y, the row at the other face; z, the column at the other face.
__device__ __forceinline__ i64 bloch_image_offset(const BlochArgs& a, i64 e, int p) {
    const i64 nz = a.nz;
    if (a.axis == 0) return (a.high ? (i64)(a.n + 1) * a.plane : 0) + e;
    if (a.axis == 1) return (i64)p * a.plane + (a.high ? 0 : (i64)(a.ny - 1) * nz) + e;
    return (i64)p * a.plane + e * nz + (a.high ? 0 : nz - 1);
}

// The offset of the corrected cell of element e on local plane p.
__device__ __forceinline__ i64 bloch_cell_offset(const BlochArgs& a, i64 e, int p) {
    const i64 nz = a.nz;
    if (a.axis == 0) return (i64)(a.high ? a.n : 1) * a.plane + e;
    if (a.axis == 1) return (i64)p * a.plane + (a.high ? (i64)(a.ny - 1) * nz : 0) + e;
    return (i64)p * a.plane + e * nz + (a.high ? nz - 1 : 0);
}

// Elements per plane of one term: the plane (x), a row (y) or a column (z).
__device__ __forceinline__ i64 bloch_row(const BlochArgs& a) {
    return a.axis == 0 ? a.plane : (a.axis == 1 ? (i64)a.nz : (i64)a.ny);
}

// own[base + t] for the axis's 2 len images of the whole slab.
extern "C" __global__ void bloch_gather(const BlochArgs a) {
    const i64 t = thread_index();
    if (t >= 2 * a.len) return;
    const int term = t >= a.len;
    const i64 i = t - term * a.len;
    const i64 row = bloch_row(a);
    const int p = a.axis == 0 ? 0 : 1 + (int)(i / row);
    const int c = bloch_source(a.axis, term);
    const real* f = a.high ? bloch_e(a, c) : bloch_h(a, c);
    a.own[a.base + t] = f[bloch_image_offset(a, i % row, p)];
}

// The correction of the axis's cells on local planes [p0, p1) (x: the plane next to the face,
// which the caller launches only when it lies in the range).
extern "C" __global__ void bloch_correct(const BlochArgs a) {
    const i64 row = bloch_row(a);
    const i64 per = a.axis == 0 ? row : (i64)(a.p1 - a.p0) * row;
    const i64 t = thread_index();
    if (t >= 2 * per) return;
    const int term = t >= per;
    const i64 e = t - term * per;
    const int p = a.axis == 0 ? 0 : a.p0 + (int)(e / row);
    const i64 k = e % row;
    const i64 i = a.base + term * a.len + (a.axis == 0 ? k : (i64)(p - 1) * row + k);
    const int c = bloch_target(a.axis, term);
    const i64 o = bloch_cell_offset(a, k, p);
    real cb;
    real* f;
    if (a.high) {
        f = bloch_h(a, c);
        const u8* m = c == 0 ? a.hmx : (c == 1 ? a.hmy : a.hmz);
        cb = a.magnetic ? c_hcb[m[o - a.plane]] : a.ch;
    } else {
        f = bloch_e(a, c);
        const u8* m = c == 0 ? a.mx : (c == 1 ? a.my : a.mz);
        cb = c_cb[m[o - a.plane]];
    }
    const real term_value = cb * (a.cm1 * a.own[i] + a.s * a.other[i]) * a.step;
    f[o] += bloch_adds(a.axis, term) ? term_value : -term_value;
}
