// Source currents and PEC faces, applied after the CPML pass of the E update (cpu.rs
// inject / zero_pec_faces).

#include "common.cuh"

// E -= cb J over the source's box of owned cells, cb from the cell's material: the discrete
// dE/dt = (curl H - J) / eps, after the E update's CPML pass. Or, for the magnetic sheet of a
// one-way plane wave or mode source, H -= ch M (dH/dt = -(curl E + M) / mu0) after the H
// update's CPML pass. A mode source's sheet carries a weight per cell: J = j w (M = m w), the
// product rounded before the coefficient's, as the CPU's cb * (j * w). One launch per sheet,
// in model order (cpu/mod.rs inject, inject_magnetic).
extern "C" __global__ void inject_source(const SourceArgs a) {
    const int cy = a.y1 - a.y0, cz = a.z1 - a.z0;
    const i64 t = thread_index();
    if (t >= (i64)(a.p1 - a.p0) * cy * cz) return;
    const int z = a.z0 + (int)(t % cz);
    const i64 r = t / cz;
    const int y = a.y0 + (int)(r % cy);
    const int p = a.p0 + (int)(r / cy);
    const i64 o = (i64)p * a.plane + (i64)y * a.nz + z;
    const real c = a.magnetic ? a.ch : c_cb[a.mat[o - a.plane]];
    // The launch covers the weights' cells from a.w on in their own C order: weight t.
    a.f[o] -= a.w ? c * (a.j * a.w[t]) : c * a.j;
}

// Tangential E = 0 on PEC (and PML-backing) minimum faces, within owned planes [p0, p1):
// x face: Ey, Ez on plane 1 (only for the slab holding global x = 0);
// y face: Ex, Ez on row j = 0;  z face: Ex, Ey at k = 0.
extern "C" __global__ void zero_pec(const PecArgs a) {
    const i64 t = thread_index();
    const int np = a.p1 - a.p0;
    if (a.x_face && a.p0 <= 1 && 1 < a.p1 && t < a.plane) {
        a.ey[a.plane + t] = 0;
        a.ez[a.plane + t] = 0;
    }
    if (a.y_face && t < (i64)np * a.nz) {
        const int p = a.p0 + (int)(t / a.nz);
        const int k = (int)(t % a.nz);
        const i64 o = (i64)p * a.plane + k;
        a.ex[o] = 0;
        a.ez[o] = 0;
    }
    if (a.z_face && t < (i64)np * a.ny) {
        const int p = a.p0 + (int)(t / a.ny);
        const int j = (int)(t % a.ny);
        const i64 o = (i64)p * a.plane + (i64)j * a.nz;
        a.ex[o] = 0;
        a.ey[o] = 0;
    }
}
