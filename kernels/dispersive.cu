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

// A series mixture's cells (nparts > 0), as src/backend/cpu/dispersive.rs step_series: with
// D = E - E^n (what the curl pass added), per part in order
//     r   = its poles' memory term;  E_k' = ca E_k + share D - g r   (E_k in its state slot)
//     its poles advance from E_k' + E_k
// and E' = sum over the parts, from zero, of weight E_k'.

#include "common.cuh"

// The memory term of `npoles` poles whose state starts at slot `slot` (r summed in pole order).
__device__ __forceinline__ real pole_memory(const PoleArgs* poles, int npoles, const real* state,
                                            int slot, i64 n, i64 q) {
    real r = 0;
    for (int i = 0; i < npoles; ++i) {
        const PoleArgs& p = poles[i];
        if (p.kind == POLE_LORENTZ) {
            r += p.c[0] * state[slot * n + q] + p.c[1] * state[(slot + 1) * n + q];
            slot += 2;
        } else {
            // Drude: mj J; Debye: mp P. Both are c[0] times the pole's one state value.
            r += p.c[0] * state[slot * n + q];
            slot += 1;
        }
    }
    return r;
}

// Advance `npoles` poles (state from slot `slot`) from drive = E' + E^n; returns the next slot.
__device__ __forceinline__ int pole_advance(const PoleArgs* poles, int npoles, real* state,
                                            int slot, i64 n, i64 q, real drive) {
    for (int i = 0; i < npoles; ++i) {
        const PoleArgs& p = poles[i];
        real* s = state + slot * n + q;
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
    return slot;
}

__device__ void dispersive_series(const DispersiveArgs& a, i64 q, i64 cell) {
    const i64 n = a.n;
    const real increment = a.e[cell] - a.e_prev[q];
    real e_new = 0;
    int slot = 0;
    const PoleArgs* poles = a.poles;
    for (int k = 0; k < a.nparts; ++k) {
        const SeriesPartArgs& part = a.parts[k];
        real* e_part = a.state + slot * n + q;
        const real e_old = e_part[0];
        const real r = pole_memory(poles, part.npoles, a.state, slot + 1, n, q);
        const real e_part_new = part.ca * e_old + part.share * increment - part.g * r;
        e_part[0] = e_part_new;
        slot = pole_advance(poles, part.npoles, a.state, slot + 1, n, q, e_part_new + e_old);
        e_new += part.weight * e_part_new;
        poles += part.npoles;
    }
    a.e[cell] = e_new;
    a.e_prev[q] = e_new;
}

// One cell of a group: cell q of its n, at index `cell` of e.
__device__ __forceinline__ void dispersive_cell(const DispersiveArgs& a, i64 q, i64 cell) {
    if (a.nparts > 0) {
        dispersive_series(a, q, cell);
        return;
    }
    const real r = pole_memory(a.poles, a.npoles, a.state, 0, a.n, q);
    const real e_new = a.e[cell] - a.g * r;
    a.e[cell] = e_new;
    const real drive = e_new + a.e_prev[q];
    a.e_prev[q] = e_new;
    pole_advance(a.poles, a.npoles, a.state, 0, a.n, q, drive);
}

extern "C" __global__ void dispersive(const DispersiveArgs a) {
    const i64 q = a.q0 + thread_index();
    if (q >= a.q1) return;
    dispersive_cell(a, q, a.cells[q]);
}

// The surface ports' virtual cells with poles (kernels/ports.cu), all their runs in one
// launch: virtual cell u of [0, n) lies in run run[u], a group whose arguments (in device
// memory) have e and e_prev pointing at the run's first cell, q0 = that cell's index u0 and
// n = the run's length; the cell is q = u - q0 of the run, at e[q]. The arithmetic is the
// group's (dispersive_cell).
extern "C" __global__ void port_poles(const PortPolesArgs a) {
    const i64 u = thread_index();
    if (u >= a.n) return;
    const DispersiveArgs& run = a.runs[a.run[u]];
    const i64 q = u - run.q0;
    dispersive_cell(run, q, q);
}
