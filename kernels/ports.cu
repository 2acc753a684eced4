// The surface ports (src/backend/cpu/ports.rs, PortPass::step; the tables of
// src/backend/ports.rs), after the dispersive pass of the E half step, on the one GPU that
// holds every slab. With the ports as virtual cells u (model by model, those with poles first):
//   port_increment: per edge q,  curl[q] = (E - ca E^n[q]) * (1/cb)   (ca, cb its painted
//                   material's); with `refresh`, only E^n[q] = E (after a state import)
//   port_drive:     per virtual cell u, d = sum over its stencil row, from 0 in order, of
//                   w curl[edge]; v[u] = ca before + cb d, (ca, cb) its model's, before =
//                   E^n of its poles (u < npole) or v[u] (its output a step ago)
//   dispersive:     (kernels/dispersive.cu) over each run of virtual cells with poles
//   port_gather:    per edge q, E = sum over its gather row, from 0 in order, of w v[cell];
//                   E^n[q] = E
// in the CPU's order of operations (--fmad=false on the GPU), so the fields are the CPU
// backend's bit for bit. Each thread writes only its own edge or virtual cell, and reads
// what the launch before wrote.

#include "common.cuh"

extern "C" __global__ void port_increment(const PortEdgesArgs a) {
    const i64 q = thread_index();
    if (q >= a.n) return;
    const real e = *a.place[q];
    if (a.refresh) {
        a.e_prev[q] = e;
        return;
    }
    a.curl[q] = (e - a.coef[2 * q] * a.e_prev[q]) * a.coef[2 * q + 1];
}

extern "C" __global__ void port_gather(const PortEdgesArgs a) {
    const i64 q = thread_index();
    if (q >= a.n) return;
    const unsigned start = q == 0 ? 0 : a.end[q - 1];
    real e = 0;
    for (unsigned g = start; g < a.end[q]; ++g) e += a.weight[g] * a.v[a.cell[g]];
    *a.place[q] = e;
    a.e_prev[q] = e;
}

extern "C" __global__ void port_drive(const PortDriveArgs a) {
    const i64 u = a.u0 + thread_index();
    if (u >= a.u1) return;
    const unsigned start = u == 0 ? 0 : a.end[u - 1];
    real drive = 0;
    for (unsigned s = start; s < a.end[u]; ++s) drive += a.weight[s] * a.curl[a.edge[s]];
    const int m = (int)a.model[u] - a.m0;
    const real before = u < a.npole ? a.e_prev[u] : a.v[u];
    a.v[u] = a.ca[m] * before + a.cb[m] * drive;
}
