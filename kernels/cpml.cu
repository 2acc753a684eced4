// CPML corrections (Roden and Gedney 2000), run after the main update over the PML layers
// only, mirroring pml_h / pml_e in src/backend/cpu.rs. For a derivative D of the pass's axis
// and the layer's (b, c, k1 = 1/kappa - 1, inv = the local 1/d along the axis: 1/primal for H,
// 1/dual for E, so a graded PML takes its own cells):
//     psi = b psi + c D;   F += sign * coef * (k1 D + psi)
// with coef = dt/mu0 for H (dt/mu of the H cell's material, c_hcb, when some material is
// magnetic: h_factor in common.cuh) and the cell's cb for E. The passes run x, then y, then z, in
// that order, as on the CPU, so corners accumulate in the same order.
// psi layouts: x [psi plane q][ny][nz]; y [owned plane][y layer][nz]; z [owned plane][ny][z layer].

#include "common.cuh"

// x layers, H: D = (E(x+1) - E) inv.
//   psi0 (Hy):  Hy += ch (k1 dEz/dx + psi0)
//   psi1 (Hz):  Hz -= ch (k1 dEy/dx + psi1)
extern "C" __global__ void cpml_x_h(const CpmlArgs a) {
    const i64 t = thread_index();
    if (t >= (i64)(a.p1 - a.p0) * a.plane) return;
    const int i = (int)(t / a.plane);
    const i64 m = t - (i64)i * a.plane;
    const int p = a.p0 + i;
    const real* cf = a.coef + 4 * (a.l0 + i);
    const real b = cf[0], c = cf[1], k1 = cf[2], inv = cf[3];
    const i64 o = (i64)p * a.plane + m;
    const i64 s = (i64)(a.q0 + i) * a.plane + m;
    const real d_ez = (a.ez[o + a.plane] - a.ez[o]) * inv;
    const real psi0 = b * a.psi0[s] + c * d_ez;
    a.psi0[s] = psi0;
    a.hy[o] += h_factor(a, a.hmy, o) * (k1 * d_ez + psi0);
    const real d_ey = (a.ey[o + a.plane] - a.ey[o]) * inv;
    const real psi1 = b * a.psi1[s] + c * d_ey;
    a.psi1[s] = psi1;
    a.hz[o] -= h_factor(a, a.hmz, o) * (k1 * d_ey + psi1);
}

// y layers, H: D = (E(y+1) - E) inv, E beyond the maximum face being zero.
//   psi0 (Hx):  Hx -= ch (k1 dEz/dy + psi0)
//   psi1 (Hz):  Hz += ch (k1 dEx/dy + psi1)
extern "C" __global__ void cpml_y_h(const CpmlArgs a) {
    const int ly = a.lo + a.hi;
    const i64 t = thread_index();
    if (t >= (i64)(a.p1 - a.p0) * ly * a.nz) return;
    const int k = (int)(t % a.nz);
    const i64 r = t / a.nz;
    const int l = (int)(r % ly);
    const int p = a.p0 + (int)(r / ly);
    const int j = layer_global(l, a.lo, a.hi, a.n_axis);
    const real* cf = a.coef + 4 * l;
    const real b = cf[0], c = cf[1], k1 = cf[2], inv = cf[3];
    const i64 o = (i64)p * a.plane + (i64)j * a.nz + k;
    const i64 s = ((i64)(p - 1) * ly + l) * a.nz + k;
    const bool in = j + 1 < a.ny;
    const real ez_n = in ? a.ez[o + a.nz] : (real)0;
    const real ex_n = in ? a.ex[o + a.nz] : (real)0;
    const real d_ez = (ez_n - a.ez[o]) * inv;
    const real psi0 = b * a.psi0[s] + c * d_ez;
    a.psi0[s] = psi0;
    a.hx[o] -= h_factor(a, a.hmx, o) * (k1 * d_ez + psi0);
    const real d_ex = (ex_n - a.ex[o]) * inv;
    const real psi1 = b * a.psi1[s] + c * d_ex;
    a.psi1[s] = psi1;
    a.hz[o] += h_factor(a, a.hmz, o) * (k1 * d_ex + psi1);
}

// z layers, H: D = (E(z+1) - E) inv, E beyond the maximum face being zero.
//   psi0 (Hx):  Hx += ch (k1 dEy/dz + psi0)
//   psi1 (Hy):  Hy -= ch (k1 dEx/dz + psi1)
extern "C" __global__ void cpml_z_h(const CpmlArgs a) {
    const int lz = a.lo + a.hi;
    const i64 t = thread_index();
    if (t >= (i64)(a.p1 - a.p0) * a.ny * lz) return;
    const int l = (int)(t % lz);
    const i64 r = t / lz;
    const int j = (int)(r % a.ny);
    const int p = a.p0 + (int)(r / a.ny);
    const int k = layer_global(l, a.lo, a.hi, a.n_axis);
    const real* cf = a.coef + 4 * l;
    const real b = cf[0], c = cf[1], k1 = cf[2], inv = cf[3];
    const i64 o = (i64)p * a.plane + (i64)j * a.nz + k;
    const i64 s = ((i64)(p - 1) * a.ny + j) * lz + l;
    const bool in = k + 1 < a.nz;
    const real ey_n = in ? a.ey[o + 1] : (real)0;
    const real ex_n = in ? a.ex[o + 1] : (real)0;
    const real d_ey = (ey_n - a.ey[o]) * inv;
    const real psi0 = b * a.psi0[s] + c * d_ey;
    a.psi0[s] = psi0;
    a.hx[o] += h_factor(a, a.hmx, o) * (k1 * d_ey + psi0);
    const real d_ex = (ex_n - a.ex[o]) * inv;
    const real psi1 = b * a.psi1[s] + c * d_ex;
    a.psi1[s] = psi1;
    a.hy[o] -= h_factor(a, a.hmy, o) * (k1 * d_ex + psi1);
}

// x layers, E: D = (H - H(x-1)) inv.
//   psi0 (Ey):  Ey -= cb (k1 dHz/dx + psi0)
//   psi1 (Ez):  Ez += cb (k1 dHy/dx + psi1)
extern "C" __global__ void cpml_x_e(const CpmlArgs a) {
    const i64 t = thread_index();
    if (t >= (i64)(a.p1 - a.p0) * a.plane) return;
    const int i = (int)(t / a.plane);
    const i64 m = t - (i64)i * a.plane;
    const int p = a.p0 + i;
    const real* cf = a.coef + 4 * (a.l0 + i);
    const real b = cf[0], c = cf[1], k1 = cf[2], inv = cf[3];
    const i64 o = (i64)p * a.plane + m;
    const i64 id = o - a.plane;
    const i64 s = (i64)(a.q0 + i) * a.plane + m;
    const real d_hz = (a.hz[o] - a.hz[o - a.plane]) * inv;
    const real psi0 = b * a.psi0[s] + c * d_hz;
    a.psi0[s] = psi0;
    a.ey[o] -= c_cb[a.my[id]] * (k1 * d_hz + psi0);
    const real d_hy = (a.hy[o] - a.hy[o - a.plane]) * inv;
    const real psi1 = b * a.psi1[s] + c * d_hy;
    a.psi1[s] = psi1;
    a.ez[o] += c_cb[a.mz[id]] * (k1 * d_hy + psi1);
}

// y layers, E: D = (H - H(y-1)) inv, H below the minimum face being zero.
//   psi0 (Ex):  Ex += cb (k1 dHz/dy + psi0)
//   psi1 (Ez):  Ez -= cb (k1 dHx/dy + psi1)
extern "C" __global__ void cpml_y_e(const CpmlArgs a) {
    const int ly = a.lo + a.hi;
    const i64 t = thread_index();
    if (t >= (i64)(a.p1 - a.p0) * ly * a.nz) return;
    const int k = (int)(t % a.nz);
    const i64 r = t / a.nz;
    const int l = (int)(r % ly);
    const int p = a.p0 + (int)(r / ly);
    const int j = layer_global(l, a.lo, a.hi, a.n_axis);
    const real* cf = a.coef + 4 * l;
    const real b = cf[0], c = cf[1], k1 = cf[2], inv = cf[3];
    const i64 o = (i64)p * a.plane + (i64)j * a.nz + k;
    const i64 id = o - a.plane;
    const i64 s = ((i64)(p - 1) * ly + l) * a.nz + k;
    const bool in = j > 0;
    const real hz_p = in ? a.hz[o - a.nz] : (real)0;
    const real hx_p = in ? a.hx[o - a.nz] : (real)0;
    const real d_hz = (a.hz[o] - hz_p) * inv;
    const real psi0 = b * a.psi0[s] + c * d_hz;
    a.psi0[s] = psi0;
    a.ex[o] += c_cb[a.mx[id]] * (k1 * d_hz + psi0);
    const real d_hx = (a.hx[o] - hx_p) * inv;
    const real psi1 = b * a.psi1[s] + c * d_hx;
    a.psi1[s] = psi1;
    a.ez[o] -= c_cb[a.mz[id]] * (k1 * d_hx + psi1);
}

// z layers, E: D = (H - H(z-1)) inv, H below the minimum face being zero.
//   psi0 (Ex):  Ex -= cb (k1 dHy/dz + psi0)
//   psi1 (Ey):  Ey += cb (k1 dHx/dz + psi1)
extern "C" __global__ void cpml_z_e(const CpmlArgs a) {
    const int lz = a.lo + a.hi;
    const i64 t = thread_index();
    if (t >= (i64)(a.p1 - a.p0) * a.ny * lz) return;
    const int l = (int)(t % lz);
    const i64 r = t / lz;
    const int j = (int)(r % a.ny);
    const int p = a.p0 + (int)(r / a.ny);
    const int k = layer_global(l, a.lo, a.hi, a.n_axis);
    const real* cf = a.coef + 4 * l;
    const real b = cf[0], c = cf[1], k1 = cf[2], inv = cf[3];
    const i64 o = (i64)p * a.plane + (i64)j * a.nz + k;
    const i64 id = o - a.plane;
    const i64 s = ((i64)(p - 1) * a.ny + j) * lz + l;
    const bool in = k > 0;
    const real hy_p = in ? a.hy[o - 1] : (real)0;
    const real hx_p = in ? a.hx[o - 1] : (real)0;
    const real d_hy = (a.hy[o] - hy_p) * inv;
    const real psi0 = b * a.psi0[s] + c * d_hy;
    a.psi0[s] = psi0;
    a.ex[o] -= c_cb[a.mx[id]] * (k1 * d_hy + psi0);
    const real d_hx = (a.hx[o] - hx_p) * inv;
    const real psi1 = b * a.psi1[s] + c * d_hx;
    a.psi1[s] = psi1;
    a.ey[o] += c_cb[a.my[id]] * (k1 * d_hx + psi1);
}
