// Host shim: lets the kernels in kernels/*.cu compile as plain C++ (g++ or clang++), for the
// host-kernel tests (design.md section 8, layer 3). Each __global__ function becomes an
// ordinary function; a launcher (host_launch.h) runs it once per thread of the launch grid,
// setting threadIdx / blockIdx first. __constant__ arrays become ordinary globals with C
// linkage, set through the shared object's symbol table.

#ifndef YEE_HOST_SHIM_H
#define YEE_HOST_SHIM_H

#include <algorithm>
#include <cmath>

struct dim3 {
    unsigned x, y, z;
};

static thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__
#define __restrict__ __restrict

template <class T>
inline T __ldg(const T* p) {
    return *p;
}

using std::isfinite;
using std::max;
using std::min;

#endif
