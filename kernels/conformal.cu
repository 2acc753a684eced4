// The conformal PEC pass (src/backend/cpu/conformal.rs; operator.rs ConformalOp), right after
// the H curl. For each cut face of H component c, with (a, b) = ((c + 1) % 3, (c + 2) % 3),
// e_a, e_b the unit steps along a and b, and o the face's cell:
//     H_c[o] += ((w0 E_b[o] + w1 E_b[o + e_a]) + w2 E_a[o]) + w3 E_a[o + e_b]
// the Dey-Mittra update's difference from the plain curl, in the CPU's order of operations, so
// the host build matches it bit for bit and a GPU build (--fmad=false) does too.
//
// One launch covers the faces of all three H components on a range of planes: the slab's faces
// lie component after component in one table, and the launch's threads take component 0's
// range of it, then 1's, then 2's. A face writes only its own H and reads only E, which the H
// half step does not change, and a cell has at most one face per component: no thread reads
// what another writes. It reads E on planes p and p + 1, as the H curl does.

#include "common.cuh"

extern "C" __global__ void conformal_h(const ConformalArgs a) {
    i64 t = thread_index();
    const i64 n0 = a.q1[0] - a.q0[0];
    const i64 n1 = a.q1[1] - a.q0[1];
    const i64 n2 = a.q1[2] - a.q0[2];
    // The component and the face: named fields rather than indexed arrays, so that nothing of
    // the arguments is copied to local memory.
    int c;
    i64 q;
    if (t < n0) {
        c = 0;
        q = a.q0[0] + t;
    } else if (t < n0 + n1) {
        c = 1;
        q = a.q0[1] + (t - n0);
    } else if (t < n0 + n1 + n2) {
        c = 2;
        q = a.q0[2] + (t - n0 - n1);
    } else {
        return;
    }
    // Hx: a = y (Ey), b = z (Ez); Hy: a = z (Ez), b = x (Ex); Hz: a = x (Ex), b = y (Ey).
    const i64 nz = a.nz;
    real* h = c == 0 ? a.hx : (c == 1 ? a.hy : a.hz);
    const real* ea = c == 0 ? a.ey : (c == 1 ? a.ez : a.ex);
    const real* eb = c == 0 ? a.ez : (c == 1 ? a.ex : a.ey);
    const i64 sa = c == 0 ? nz : (c == 1 ? 1 : a.plane);
    const i64 sb = c == 0 ? 1 : (c == 1 ? a.plane : nz);
    const i64 o = (i64)a.off[q] + a.plane;
    const real* w = a.w + 4 * q;
    h[o] += w[0] * eb[o] + w[1] * eb[o + sa] + w[2] * ea[o] + w[3] * ea[o + sb];
}
