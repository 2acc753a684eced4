// Monitors: probes gather into a device ring of rows and snapshots into device staging,
// both copied to pinned host memory asynchronously; the NaN/Inf check raises a flag.

#include "common.cuh"

// out[i] = *src[i]: every probe sample held by one GPU, in one launch (out is this step's row
// of the probe ring).
extern "C" __global__ void probe_gather(const ProbeArgs a) {
    const i64 t = thread_index();
    if (t >= a.n) return;
    a.out[t] = *a.src[t];
}

// out[out0 + (ii cy + jj) cz + kk] = f[(p0 + ii sx) plane + (y0 + jj sy) nz + z0 + kk sz]:
// the part of a strided snapshot region inside one slab.
extern "C" __global__ void snapshot_gather(const GatherArgs a) {
    const i64 t = thread_index();
    if (t >= (i64)a.cx * a.cy * a.cz) return;
    const int kk = (int)(t % a.cz);
    const i64 r = t / a.cz;
    const int jj = (int)(r % a.cy);
    const int ii = (int)(r / a.cy);
    const i64 src = (i64)(a.p0 + ii * a.sx) * a.plane + (i64)(a.y0 + jj * a.sy) * a.nz + a.z0 + (i64)kk * a.sz;
    a.out[a.out0 + t] = a.f[src];
}

// flag = 1 if any f[c][begin + i], i < count, c < 6, is NaN or infinite. blockIdx.y = c.
extern "C" __global__ void check_finite(const FiniteArgs a) {
    const i64 t = thread_index();
    if (t >= a.count) return;
    // A chain of selects rather than a[blockIdx.y], which would copy the array to local memory.
    const unsigned c = blockIdx.y;
    const real* f = c == 0 ? a.f[0] : c == 1 ? a.f[1] : c == 2 ? a.f[2] : c == 3 ? a.f[3] : c == 4 ? a.f[4] : a.f[5];
    const real v = f[a.begin + t];
    if (!isfinite(v)) *a.flag = 1;
}
