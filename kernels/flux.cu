// Flux monitors: running DFTs of the tangential fields on a plane, accumulated on the device in
// f64 (the CPU backend does the same on the host, src/flux.rs), read back only when a
// spectrum is written.

#include "common.cuh"

// For each cell of the part and each frequency i = f0 + j of the launch, with this sample's
// weights w[j] (each field at its own sample time, computed on the host):
//   X += x (cos(p) k dt + i sin(p) k dt),  p = -2 pi f t,
// for x = E_b, E_c, below H_b(below) + above H_b(above), the same for H_c (H interpolated
// linearly onto the E plane: 1/2 each on a uniform axis, crate::flux::h_weights).
// Accumulators: acc[q][i][cell] real parts (q = E_b, E_c, H_b, H_c), then acc[4 + q][i][cell]
// imaginary parts. One thread per cell, looping over the frequencies: the six field values are
// read once, and at each frequency a warp's accumulators are consecutive (cells fastest).
// Cell indices fit 32 bits (a part's accumulators would not fit a GPU long before).
// Every product and sum is rounded as in src/flux.rs (no fused multiply-add).
extern "C" __global__ void flux_dft(const FluxArgs a) {
    const i64 t = thread_index();
    if (t >= a.cells) return;
    const int c = (int)t;
    const int u = c / a.nv;
    const int v = c - u * a.nv;
    const i64 off = (i64)u * a.su + (i64)v * a.sv;
    const double x0 = (double)a.eb[off];
    const double x1 = (double)a.ec[off];
    const double x2 = a.below * (double)a.hb0[off] + a.above * (double)a.hb1[off];
    const double x3 = a.below * (double)a.hc0[off] + a.above * (double)a.hc1[off];
    const i64 q = (i64)a.nf * a.cells;
    double* re = a.acc + (i64)a.f0 * a.cells + c;
    for (int j = 0; j < a.nw; ++j, re += a.cells) {
        double* im = re + 4 * q;
        const double wre = a.w[j][0], wie = a.w[j][1];
        const double wrh = a.w[j][2], wih = a.w[j][3];
        // All eight accumulators loaded before any store: the compiler cannot prove the stores
        // do not alias the later loads, so interleaved read-modify-writes would run one at a
        // time.
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
}
