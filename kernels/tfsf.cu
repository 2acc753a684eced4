// The total-field / scattered-field pass (cpu/tfsf.rs; operator.rs TfsfOp): the 1-D incident
// grid's half step, then the corrections of the fields next to the box's faces.

#include "common.cuh"

// The 1-D incident grid, one thread per node. H phase (the H half step): e_i -= S (h_i - h_{i-1})
// for 0 < i < n - 1, e_0 = drive (the hard source), e_{n-1} stays 0; E phase: h_i -= S (e_{i+1}
// - e_i) for i < n - 1. A thread writes only its own node of the array it advances and reads
// the other array, so the launch has no races. Each GPU holding correction points runs it on
// its own copy of the grid, identically.
extern "C" __global__ void tfsf_incident(const TfsfIncidentArgs a) {
    const i64 i = thread_index();
    if (i >= a.n) return;
    if (a.h_phase) {
        if (i == 0) {
            a.e[0] = a.drive;
        } else if (i < a.n - 1) {
            a.e[i] -= a.s * (a.h[i] - a.h[i - 1]);
        }
    } else if (i < a.n - 1) {
        a.h[i] -= a.s * (a.e[i + 1] - a.e[i]);
    }
}

// One correction group's points [q0, q1) (those on the planes of this launch): with
// v = inc[node] + w (inc[node + 1] - inc[node]), field[off + plane] += cb * (fac * v), cb the
// E material's cb (electric), or the H material's cb when some material is magnetic, else
// dt/mu0. A cell appears at most once in a group, so the threads never write the same value.
extern "C" __global__ void tfsf_correct(const TfsfArgs a) {
    const i64 t = thread_index();
    if (t >= a.q1 - a.q0) return;
    const i64 q = a.q0 + t;
    const i64 o = (i64)a.off[q];
    const unsigned i = a.node[q];
    const real v = a.inc[i] + a.w[q] * (a.inc[i + 1] - a.inc[i]);
    const real cb = a.electric ? c_cb[a.mat[o]] : (a.magnetic ? c_hcb[a.mat[o]] : a.ch);
    a.f[o + a.plane] += cb * (a.fac[q] * v);
}
