// The dispersive pass (src/backend/cpu/dispersive.rs, Group::step), after the sources and
// before the PEC faces of the E half step. For each cell of a group (one E component, one
// material with poles), with E the value the curl and source passes left (E^{n+1} without the
// poles) and E^n its value a step ago:
//     r  = sum over the poles, in order, of their memory term
//          (Lorentz mj J + mp P, Drude mj J, Debye mp P)
//     E' = E - g r                                  (the final E^{n+1})
//     d  = E' + E^n
//     Lorentz: J' = alpha J + beta P + kappa d;  P' = P + half_dt (J + J')
//     Drude:   J' = alpha J + kappa d
//     Debye:   P' = a P + b d
// in the CPU's order of operations, so the host build matches it bit for bit and a GPU build
// (--fmad=false) does too. One thread per cell of cells [q0, q1) of the group; the cells are
// sorted, so a range of x planes is a range of cells.

#include "common.cuh"

extern "C" __global__ void dispersive(const DispersiveArgs a) {
    const i64 q = a.q0 + thread_index();
    if (q >= a.q1) return;
    const i64 n = a.n;
    const i64 cell = a.cells[q];
    real r = 0;
    int slot = 0;
    for (int i = 0; i < a.npoles; ++i) {
        const PoleArgs& p = a.poles[i];
        if (p.kind == POLE_LORENTZ) {
            r += p.c[0] * a.state[slot * n + q] + p.c[1] * a.state[(slot + 1) * n + q];
            slot += 2;
        } else {
            // Drude: mj J; Debye: mp P. Both are c[0] times the pole's one state value.
            r += p.c[0] * a.state[slot * n + q];
            slot += 1;
        }
    }
    const real e_new = a.e[cell] - a.g * r;
    a.e[cell] = e_new;
    const real drive = e_new + a.e_prev[q];
    a.e_prev[q] = e_new;
    slot = 0;
    for (int i = 0; i < a.npoles; ++i) {
        const PoleArgs& p = a.poles[i];
        real* s = a.state + slot * n + q;
        if (p.kind == POLE_LORENTZ) {
            const real j = s[0], pp = s[n];
            const real j_new = p.c[2] * j + p.c[3] * pp + p.c[4] * drive;
            s[0] = j_new;
            s[n] = pp + p.c[5] * (j + j_new);
            slot += 2;
        } else {
            // Drude: alpha J + kappa d; Debye: a P + b d.
            s[0] = p.c[1] * s[0] + p.c[2] * drive;
            slot += 1;
        }
    }
}
