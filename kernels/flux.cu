// Flux monitors: running DFTs of the tangential fields on a plane, accumulated on the device in
// f64 (the CPU backend does the same on the host, src/flux.rs), read back only when a
// spectrum is written.

#include "common.cuh"

// The DFT weights of this step, once per frequency rather than once per (frequency, cell):
//   w[i] = (cos(pe) dt, sin(pe) dt, cos(ph) dt, sin(ph) dt),  pe = -2 pi f t_e, ph = -2 pi f t_h,
// with f = freq[i], E at t_e = step dt and H at t_h = t_e - dt / 2. One thread per frequency.
extern "C" __global__ void flux_weights(const FluxWeightsArgs a) {
    const i64 i = thread_index();
    if (i >= a.nf) return;
    const double f = a.freq[i];
    const double pe = -2.0 * 3.14159265358979323846 * f * a.t_e;
    const double ph = -2.0 * 3.14159265358979323846 * f * a.t_h;
    a.w[4 * i + 0] = cos(pe) * a.dt;
    a.w[4 * i + 1] = sin(pe) * a.dt;
    a.w[4 * i + 2] = cos(ph) * a.dt;
    a.w[4 * i + 3] = sin(ph) * a.dt;
}

// For frequency i and each cell of the part, with the weights of flux_weights (each field at
// its own sample time):
//   X += x (cos(p) dt + i sin(p) dt),  p = -2 pi f t,
// for x = E_b, E_c, below H_b(below) + above H_b(above), the same for H_c (H interpolated
// linearly onto the E plane: 1/2 each on a uniform axis, crate::flux::h_weights). Accumulators: acc[q][i][cell] real parts (q = E_b, E_c, H_b, H_c), then
// acc[4 + q][i][cell] imaginary parts. One thread per (frequency, cell), cells fastest.
// Every product and sum is rounded as in src/flux.rs (no fused multiply-add).
extern "C" __global__ void flux_dft(const FluxArgs a) {
    const i64 t = thread_index();
    if (t >= a.cells * a.nf) return;
    const i64 c = t % a.cells;
    const i64 i = t / a.cells;
    const i64 off = (c / a.nv) * a.su + (c % a.nv) * a.sv;
    const double x0 = (double)a.eb[off];
    const double x1 = (double)a.ec[off];
    const double x2 = a.below * (double)a.hb0[off] + a.above * (double)a.hb1[off];
    const double x3 = a.below * (double)a.hc0[off] + a.above * (double)a.hc1[off];
    const double wre = a.w[4 * i + 0], wie = a.w[4 * i + 1];
    const double wrh = a.w[4 * i + 2], wih = a.w[4 * i + 3];
    const i64 q = a.nf * a.cells;
    double* re = a.acc + i * a.cells + c;
    double* im = re + 4 * q;
    // Load all eight accumulators before storing any: the compiler cannot prove the stores do
    // not alias the later loads, so interleaved read-modify-writes would run one at a time.
    const double r0 = re[0], r1 = re[q], r2 = re[2 * q], r3 = re[3 * q];
    const double i0 = im[0], i1 = im[q], i2 = im[2 * q], i3 = im[3 * q];
    re[0] = r0 + x0 * wre;
    im[0] = i0 + x0 * wie;
    re[q] = r1 + x1 * wre;
    im[q] = i1 + x1 * wie;
    re[2 * q] = r2 + x2 * wrh;
    im[2 * q] = i2 + x2 * wih;
    re[3 * q] = r3 + x3 * wrh;
    im[3 * q] = i3 + x3 * wih;
}
