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

// The spectrum's partial sums, row by row (crate::flux::row_sums): for row u of the part (its
// cells u row .. u row + row - 1) and frequency f,
//   out[f][u] = (sum w_bc Re E_b Re H_c, sum w_bc Im E_b Im H_c,
//                sum w_cb Re E_c Re H_b, sum w_cb Im E_c Im H_b),
// each added cell by cell in order from 0, as the CPU does; the host adds the rows in order
// (crate::flux::patch_power). So a spectrum needs four values per row and frequency from the
// device, not the accumulators. One thread per (row, frequency), rows fastest.
extern "C" __global__ void flux_rows(const FluxRowsArgs a) {
    const i64 t = thread_index();
    const int rows = a.cells / a.row;
    if (t >= (i64)rows * a.nf) return;
    const int u = (int)(t % rows);
    const int f = (int)(t / rows);
    const i64 q = (i64)a.nf * a.cells;
    const double* re = a.acc + (i64)f * a.cells + (i64)u * a.row;
    const double* im = re + 4 * q;
    const double* w0 = a.w + (i64)u * a.row;
    const double* w1 = w0 + a.cells;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int v = 0; v < a.row; ++v) {
        s0 = s0 + w0[v] * (re[v] * re[3 * q + v]);
        s1 = s1 + w0[v] * (im[v] * im[3 * q + v]);
        s2 = s2 + w1[v] * (re[q + v] * re[2 * q + v]);
        s3 = s3 + w1[v] * (im[q + v] * im[2 * q + v]);
    }
    double* o = a.out + 4 * t;
    o[0] = s0;
    o[1] = s1;
    o[2] = s2;
    o[3] = s3;
}
