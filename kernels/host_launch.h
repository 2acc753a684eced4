// Host launchers: yee_host_<kernel>(args, grid, block) runs <kernel> once for every thread of
// the grid, in order (blocks x fastest, then threads x fastest), like a GPU that runs one
// thread at a time. Used only by the host-kernel tests, after host_shim.h and the kernels.

#ifndef YEE_HOST_LAUNCH_H
#define YEE_HOST_LAUNCH_H

// YEE_HOST_REVERSE=1 runs the blocks and threads in reverse order instead (the tests run a
// kernel both ways: one whose threads read what others write in the launch is caught).
#ifndef YEE_HOST_REVERSE
#define YEE_HOST_REVERSE 0
#endif

// The i-th of n in the launch order.
static inline unsigned yee_host_order(unsigned i, unsigned n) {
    return YEE_HOST_REVERSE ? n - 1 - i : i;
}

#define YEE_HOST_LAUNCHER(name, Args)                                                        \
    extern "C" void yee_host_##name(const void* args, const unsigned* grid, const unsigned* block) { \
        const Args a = *static_cast<const Args*>(args);                                      \
        gridDim = dim3{grid[0], grid[1], grid[2]};                                           \
        blockDim = dim3{block[0], block[1], block[2]};                                       \
        for (unsigned bz = 0; bz < grid[2]; ++bz)                                            \
            for (unsigned by = 0; by < grid[1]; ++by)                                        \
                for (unsigned bx = 0; bx < grid[0]; ++bx) {                                  \
                    blockIdx = dim3{yee_host_order(bx, grid[0]), yee_host_order(by, grid[1]), \
                                    yee_host_order(bz, grid[2])};                            \
                    for (unsigned tz = 0; tz < block[2]; ++tz)                               \
                        for (unsigned ty = 0; ty < block[1]; ++ty)                           \
                            for (unsigned tx = 0; tx < block[0]; ++tx) {                     \
                                threadIdx = dim3{yee_host_order(tx, block[0]),               \
                                                 yee_host_order(ty, block[1]),               \
                                                 yee_host_order(tz, block[2])};              \
                                name(a);                                                     \
                            }                                                                \
                }                                                                            \
    }

YEE_KERNELS(YEE_HOST_LAUNCHER)

// sizeof(real) and the argument sizes, so the test can check the Rust mirror's layout.
extern "C" unsigned long long yee_host_arg_size(int which) {
    switch (which) {
        case 0: return sizeof(UpdateArgs);
        case 1: return sizeof(CpmlArgs);
        case 2: return sizeof(SourceArgs);
        case 3: return sizeof(PecArgs);
        case 4: return sizeof(ProbeArgs);
        case 5: return sizeof(GatherArgs);
        case 6: return sizeof(FiniteArgs);
        case 7: return sizeof(NegateArgs);
        case 8: return sizeof(FluxArgs);
        case 9: return sizeof(DispersiveArgs);
        case 10: return sizeof(TfsfIncidentArgs);
        case 11: return sizeof(TfsfArgs);
        case 12: return sizeof(FluxRowsArgs);
        case 13: return sizeof(ConformalArgs);
        case 14: return sizeof(LumpedArgs);
        case 15: return sizeof(BlochArgs);
        case 16: return sizeof(PortEdgesArgs);
        case 17: return sizeof(PortDriveArgs);
        case 18: return sizeof(PortPolesArgs);
        default: return sizeof(real);
    }
}

#endif
