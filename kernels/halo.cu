// Halo planes travel as plain copies (cuMemcpyDtoDAsync / cuMemcpyPeerAsync, or through
// pinned host memory); the one kernel here serves the PMC x face, whose halo is the mirror
// image of the first owned plane with the sign flipped.

#include "common.cuh"

// dst[i] = -src[i]: tangential H is odd about a PMC wall.
extern "C" __global__ void copy_negated(const NegateArgs a) {
    const i64 t = thread_index();
    if (t >= a.n) return;
    a.dst[t] = -a.src[t];
}
