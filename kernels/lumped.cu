// The cells pass: a lumped RLC element (src/model/lumped.rs, LumpedElement::update), a cell
// pass with a device form (CellPass::kernel), after the sources and the TF/SF correction and
// before the dispersive poles of the E half step. Per edge e of the element's box, with E* the
// field the curl and every additive correction left, E^n its value a step ago (slot 0) and
// c[0..8] the edge's coefficient row:
//   parallel (slots E^n, I_L; c = a, b, k, m):
//     E^{n+1}   = a (E* - b E^n - k I_L)
//     I_L      += m (E^{n+1} + E^n)
//   series (slots E^n, I, q; c = p, k/2, d/2, 1/Z+, Z-, 1/C, dt/2):
//     r         = (d/2) E^n - q (1/C) - Z- I
//     E^{n+1}   = p (E* - (k/2) (I + (1/Z+) r))
//     I'        = (1/Z+) ((d/2) E^{n+1} + r)
//     q        += (dt/2) (I + I');  I = I'
//   E^n = E^{n+1} in both.
// Every product and sum in the CPU's order and grouping (--fmad=false on the GPU,
// -ffp-contract=off on the host), so the fields and the state are the CPU backend's bit for bit.
// One thread per cell of the box on local planes [p0, p1) of one slab; the state and the rows
// are the slab's part of the box in C order, cell first + t for thread t.

#include "common.cuh"

extern "C" __global__ void lumped(const LumpedArgs a) {
    const int cy = a.y1 - a.y0, cz = a.z1 - a.z0;
    const i64 t = thread_index();
    if (t >= (i64)(a.p1 - a.p0) * cy * cz) return;
    const int z = a.z0 + (int)(t % cz);
    const i64 r0 = t / cz;
    const int y = a.y0 + (int)(r0 % cy);
    const int p = a.p0 + (int)(r0 / cy);
    const i64 o = (i64)p * a.plane + (i64)y * a.nz + z;
    const i64 s = a.first + t;
    const i64 n = a.cells;
    const real* c = a.coef + 8 * s;
    const real e_star = a.f[o];
    const real e_old = a.state[s];
    real e_new;
    if (a.series) {
        const real i = a.state[s + n], q = a.state[s + 2 * n];
        const real r = c[2] * e_old - q * c[5] - c[4] * i;
        e_new = c[0] * (e_star - c[1] * (i + c[3] * r));
        const real i_new = c[3] * (c[2] * e_new + r);
        a.state[s + n] = i_new;
        a.state[s + 2 * n] = q + c[6] * (i + i_new);
    } else {
        const real i_l = a.state[s + n];
        e_new = c[0] * (e_star - c[1] * e_old - c[2] * i_l);
        a.state[s + n] = i_l + c[3] * (e_new + e_old);
    }
    a.f[o] = e_new;
    a.state[s] = e_new;
}
