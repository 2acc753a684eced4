// Shared declarations of the yee kernels: the argument structs, the material table in constant
// memory, and the kernel list.
//
// The program NVRTC compiles is `typedef float real;` (or double) followed by #includes of
// this file and every kernels/*.cu, all embedded in the binary (src/backend/cuda/source.rs).
// The same text also compiles as C++ on the host behind host_shim.h (the host-kernel tests),
// so the kernels keep to a portable subset: one thread per cell or per column, no shared
// memory, no barriers, no warp intrinsics.
//
// Layout (design.md section 2): each field component of a slab is (n + 2) x-planes of
// ny * nz values, z contiguous, local plane 0 and n + 1 being the halos; owned plane p
// (1..=n) is global plane x0 + p - 1. Material ids cover the owned planes only: the id of
// field offset o is at o - plane.
//
// Every argument struct is mirrored field for field by a #[repr(C)] struct in
// src/backend/cuda/args.rs; the static_asserts pin the sizes both sides agree on.

#ifndef YEE_COMMON_CUH
#define YEE_COMMON_CUH

typedef long long i64;
typedef unsigned char u8;

// What lies beyond a face along y or z (cpu.rs `Beyond`).
#define BEYOND_ZERO 0
#define BEYOND_WRAP 1
#define BEYOND_MIRROR 2

#define MAX_MATERIALS 256

// E update coefficients per material id: E = ca E + cb (curl H - J).
// H update coefficients per material id, used only when some material is magnetic (the
// `magnetic` flag of UpdateArgs / CpmlArgs): H = hca H - hcb curl E. Otherwise H has no
// material ids and every cell takes H -= ch curl E.
extern "C" {
__constant__ real c_ca[MAX_MATERIALS];
__constant__ real c_cb[MAX_MATERIALS];
__constant__ real c_hca[MAX_MATERIALS];
__constant__ real c_hcb[MAX_MATERIALS];
}

// update_h / update_e: one thread per (j, k) column, marching over planes
// [p0 + blockIdx.y * chunk, min(p1, that + chunk)).
struct UpdateArgs {
    real *ex, *ey, *ez, *hx, *hy, *hz;
    const u8 *mx, *my, *mz;
    const u8 *hmx, *hmy, *hmz;  // H material ids (null unless magnetic)
    i64 plane;
    int ny, nz;
    int p0, p1, chunk;
    int y_lo, y_hi, z_lo, z_hi;  // BEYOND_* of each face
    int magnetic;                // 1: H takes (c_hca, c_hcb)[id], 0: H -= ch curl E
    // The derivatives' steps along x, y, z (operator.rs inv_primal for update_h, inv_dual for
    // update_e): ix[p] for local plane p (the pointer is offset by the slab's first x, so
    // ix[p] is the value of global plane x0 + p - 1), iy[j], iz[k]. On a uniform axis every
    // value is 1/d.
    const real *ix, *iy, *iz;
    real ch;             // dt / mu0
    real pad;
};
static_assert(sizeof(UpdateArgs) == 168 + 2 * sizeof(real), "UpdateArgs layout");

// CPML correction passes. Along y and z: every owned plane in [p0, p1), the layers of that
// axis (lo cells at the minimum face, hi at the maximum, n_axis cells in all). Along x: the
// planes [p0, p1) of one run of consecutive layers, plane p being layer l0 + p - p0 and psi
// plane q0 + p - p0.
struct CpmlArgs {
    real *ex, *ey, *ez, *hx, *hy, *hz;
    real *psi0, *psi1;  // the pass's two psi arrays
    const real* coef;   // per layer: b, c, 1/kappa - 1, 1/d (the local step along the axis)
    const u8 *mx, *my, *mz;
    const u8 *hmx, *hmy, *hmz;  // H material ids (null unless magnetic)
    i64 plane;
    int ny, nz;
    int p0, p1;
    int lo, hi, n_axis;
    int l0, q0;
    int magnetic;  // H passes: 1 = the factor is c_hcb of the H cell's material, 0 = ch
    real ch;   // dt / mu0 (H passes)
    real pad;
};
static_assert(sizeof(CpmlArgs) == 168 + 2 * sizeof(real), "CpmlArgs layout");

// The H CPML correction's factor at field offset o of an H component with ids m: dt/mu of the
// cell's material (c_hcb) when some material is magnetic, else dt/mu0.
__device__ __forceinline__ real h_factor(const CpmlArgs& a, const u8* m, i64 o) {
    return a.magnetic ? c_hcb[m[o - a.plane]] : a.ch;
}

// A current sheet over a box of owned cells: electric (E -= cb[mat] j, phase E) or magnetic
// (H -= ch j, phase H; mat unused).
struct SourceArgs {
    real* f;
    const u8* mat;
    // A mode source's weights from the launch's first cell on, one per cell in the launch's
    // C order; null for a uniform sheet.
    const real* w;
    i64 plane;
    int nz;
    int p0, p1, y0, y1, z0, z1;
    int magnetic;
    real j;
    real ch;  // dt / mu0
};
static_assert(sizeof(SourceArgs) == 64 + 2 * sizeof(real), "SourceArgs layout");

// Tangential E zeroed on PEC minimum faces.
struct PecArgs {
    real *ex, *ey, *ez;
    i64 plane;
    int ny, nz, p0, p1;
    int x_face, y_face, z_face;
    int pad_;
};
static_assert(sizeof(PecArgs) == 64, "PecArgs layout");

// Probe samples: out[i] = *src[i].
struct ProbeArgs {
    const real* const* src;
    real* out;
    int n;
    int pad_;
};
static_assert(sizeof(ProbeArgs) == 24, "ProbeArgs layout");

// A strided box of one slab's field into a staging buffer (C order, out0 onwards).
struct GatherArgs {
    const real* f;
    real* out;
    i64 plane;
    i64 out0;
    int nz;
    int p0, cx, cy, cz;
    int sx, sy, sz;
    int y0, z0;
};
static_assert(sizeof(GatherArgs) == 72, "GatherArgs layout");

// NaN / Inf check of six owned-plane ranges.
struct FiniteArgs {
    const real* f[6];
    int* flag;
    i64 begin, count;
};
static_assert(sizeof(FiniteArgs) == 72, "FiniteArgs layout");

// dst[i] = -src[i]: the PMC mirror halo.
struct NegateArgs {
    real* dst;
    const real* src;
    i64 n;
};
static_assert(sizeof(NegateArgs) == 24, "NegateArgs layout");

// Frequencies one flux_dft launch accumulates: their weights travel in the arguments.
#define FLUX_FREQS_PER_LAUNCH 32

// One flux monitor's part inside one slab, for frequencies [f0, f0 + nw) of its nf: cell
// (u, v) of the part, u < cells / nv, v < nv, is at field offset u su + v sv from each plane
// pointer; H below / above the E plane. The weights are this sample's, computed on the host
// (crate::flux::phasor) so that the device's sin and cos never enter the DFT:
// w[j] = (cos pe k dt, sin pe k dt, cos ph k dt, sin ph k dt) for frequency f = f0 + j,
// pe = -2 pi f t_e, ph = -2 pi f t_h, k the decimation.
struct FluxArgs {
    const real *eb, *ec;
    const real *hb0, *hb1, *hc0, *hc1;
    double* acc;  // [8][nf][cells]: real parts of E_b, E_c, H_b, H_c, then imaginary
    i64 su, sv;
    int cells, nv;
    int nf, f0;
    int nw, pad;
    double below, above;  // H's interpolation weights onto the E plane (1/2 each if uniform)
    double w[FLUX_FREQS_PER_LAUNCH][4];
};
static_assert(sizeof(FluxArgs) == 112 + 32 * FLUX_FREQS_PER_LAUNCH, "FluxArgs layout");

// One flux patch part's row sums (flux_rows): its accumulators (FluxArgs::acc), its cells'
// quadrature weights [2][cells] (crate::flux::patch_weights), and out[nf][rows][4].
struct FluxRowsArgs {
    const double* acc;
    const double* w;
    double* out;
    int cells, row;  // cells of the part, cells per row (rows = cells / row)
    int nf, pad;
};
static_assert(sizeof(FluxRowsArgs) == 40, "FluxRowsArgs layout");

// The dispersive pass (kernels/dispersive.cu): at most MAX_POLES poles per material, each
// one PoleArgs. The coefficients c[] by kind (src/operator.rs PoleOp):
//   POLE_LORENTZ: mj, mp, alpha, beta, kappa, half_dt (state J, P)
//   POLE_DRUDE:   mj, alpha, kappa                    (state J)
//   POLE_DEBYE:   mp, a, b                            (state P)
#define MAX_POLES 8
#define POLE_LORENTZ 0
#define POLE_DRUDE 1
#define POLE_DEBYE 2
struct PoleArgs {
    int kind;
    int pad_;
    real c[6];
};
static_assert(sizeof(PoleArgs) == 8 + 6 * sizeof(real), "PoleArgs layout");

// A series mixture (a smoothed dispersive surface cell, src/operator.rs DispersiveOp::series)
// has up to MAX_SERIES_PARTS parts, each its own E (state slot) and poles (the next npoles of
// the group's poles, their state after the part's E).
#define MAX_SERIES_PARTS 3
#define MAX_GROUP_POLES (2 * MAX_POLES)
struct SeriesPartArgs {
    int npoles;
    int pad_;
    real weight;  // the part's weight in the cell's E
    real ca;      // its own update's E factor
    real share;   // its cb over the mixture's: its share of the curl pass's increment
    real g;       // its cb eps0: its memory term's factor
};
static_assert(sizeof(SeriesPartArgs) == 8 + 4 * sizeof(real), "SeriesPartArgs layout");

// One group of the dispersive pass (one E component, one material, in one slab): cells
// [q0, q1) of its n cells. cells[q] indexes the component's owned values (e points at the
// first owned plane); state is [slot][n]. nparts is 0 for a material with poles (npoles of
// them) and the parts' count for a series mixture.
struct DispersiveArgs {
    real* e;
    const unsigned* cells;
    real* e_prev;
    real* state;
    i64 n;
    i64 q0, q1;
    int npoles;
    int nparts;
    real g;  // cb eps0: the memory term's factor
    real pad_g;
    SeriesPartArgs parts[MAX_SERIES_PARTS];
    PoleArgs poles[MAX_GROUP_POLES];
};
static_assert(sizeof(DispersiveArgs) == 64 + 2 * sizeof(real) +
                                            MAX_SERIES_PARTS * sizeof(SeriesPartArgs) +
                                            MAX_GROUP_POLES * sizeof(PoleArgs),
              "DispersiveArgs layout");

// The TF/SF source's 1-D incident grid (kernels/tfsf.cu tfsf_incident).
struct TfsfIncidentArgs {
    real* e;
    real* h;
    i64 n;        // nodes
    int h_phase;  // 1: the H half step (advance e, drive node 0); 0: the E half step (advance h)
    int pad_;
    real s;       // the 1-D Courant number
    real drive;   // e_0 at this half step
};
static_assert(sizeof(TfsfIncidentArgs) == 32 + 2 * sizeof(real), "TfsfIncidentArgs layout");

// One TF/SF correction group on one slab (kernels/tfsf.cu tfsf_correct).
struct TfsfArgs {
    real* f;                 // the corrected component, with its halo planes
    const u8* mat;           // its material ids (E, or H when magnetic; owned cells)
    const unsigned* off;     // per point: the cell's offset among the owned cells
    const unsigned* node;    // per point: the 1-D node below it
    const real* w;           // per point: the interpolation weight
    const real* fac;         // per point: the face's factor
    const real* inc;         // the 1-D array read: h for E points, e for H points
    i64 plane;
    i64 q0, q1;
    int electric;            // 1: E points (cb = c_cb[mat]); 0: H points
    int magnetic;            // H points: 1 = c_hcb[mat], 0 = ch
    real ch;                 // dt / mu0
    real pad_;
};
static_assert(sizeof(TfsfArgs) == 88 + 2 * sizeof(real), "TfsfArgs layout");

// The conformal PEC pass on one slab (kernels/conformal.cu conformal_h): the slab's cut faces
// of Hx, then Hy, then Hz in one table, faces [q0[c], q1[c]) of component c on this launch's
// planes.
struct ConformalArgs {
    const real *ex, *ey, *ez;
    real *hx, *hy, *hz;
    const unsigned* off;  // per face: the cell's offset among the owned cells
    const real* w;        // per face: w0, w1, w2, w3
    i64 plane;
    i64 q0[3], q1[3];
    int nz;
    int pad_;
};
static_assert(sizeof(ConformalArgs) == 128, "ConformalArgs layout");

// One lumped RLC element on one slab (kernels/lumped.cu lumped): its cells on local planes
// [p0, p1), rows [y0, y1) and columns [z0, z1) of its component f. The slab's part of the box
// holds `cells` cells in C order; the launch's first is cell `first` of the state ([slot][cells])
// and of the coefficient rows (8 reals per cell).
struct LumpedArgs {
    real* f;             // the element's component, with its halo planes
    real* state;         // E^n, then I_L (parallel) or I, q (series)
    const real* coef;    // the slab's coefficient rows
    i64 plane;
    i64 cells;
    i64 first;
    int nz;
    int p0, p1, y0, y1, z0, z1;
    int series;          // 1: series R, L, C; 0: parallel
};
static_assert(sizeof(LumpedArgs) == 80, "LumpedArgs layout");

// The Bloch pass on one slab, one Bloch axis at a time (kernels/bloch.cu): bloch_gather
// copies the axis's images of the slab into `own`; bloch_correct adds the phase's correction
// to the cells next to the face on local planes [p0, p1). The slab's images of a half step lie
// axis after axis, each axis's two terms after each other: `len` values per term from `base`
// (x: one plane, when the slab holds the face; y: n nz; z: n ny).
struct BlochArgs {
    real *ex, *ey, *ez, *hx, *hy, *hz;
    const u8 *mx, *my, *mz;     // E material ids (owned cells)
    const u8 *hmx, *hmy, *hmz;  // H material ids (null unless magnetic)
    real* own;                  // this field set's images
    const real* other;          // the other set's, in the same order
    i64 plane;
    i64 base, len;
    int ny, nz, n;
    int p0, p1;
    int axis;                   // 0, 1, 2
    int high;                   // 1: the H half step (images beyond the maximum face)
    int magnetic;               // H: 1 = c_hcb of the cell's material, 0 = ch
    real cm1, s;                // the rotation: cos - 1, and sin signed for the set and half
    real step;                  // the step across the face (1 / d)
    real ch;                    // dt / mu0
};
static_assert(sizeof(BlochArgs) == 168 + 4 * sizeof(real), "BlochArgs layout");

// The surface ports' edges (kernels/ports.cu port_increment, port_gather): one thread per edge.
struct PortEdgesArgs {
    real* const* place;     // per edge: the address of its E value in its slab
    const real* coef;       // per edge: ca and 1/cb of its painted material
    real* e_prev;           // per edge: E at the last step
    real* curl;             // per edge: the increment over cb
    const unsigned* end;    // per edge: the end of its gather row
    const unsigned* cell;   // the gather rows: virtual cells
    const real* weight;     // the gather rows: weights
    const real* v;          // per virtual cell: its output
    i64 n;                  // edges
    int refresh;            // port_increment: 1 = only E^n = E
    int pad_;
};
static_assert(sizeof(PortEdgesArgs) == 80, "PortEdgesArgs layout");

// Models one port_drive launch takes (their (ca, cb) travel in the arguments).
#define MAX_PORT_MODELS 32

// The surface ports' drives (kernels/ports.cu port_drive): one thread per virtual cell of
// [u0, u1), the cells of models [m0, m0 + MAX_PORT_MODELS).
struct PortDriveArgs {
    real* v;                // per virtual cell: its value
    const real* e_prev;     // per virtual cell with poles (u < npole): E at the last step
    const real* curl;       // per edge: the increment over cb
    const unsigned* model;  // per virtual cell: its model
    const unsigned* end;    // per virtual cell: the end of its stencil row
    const unsigned* edge;   // the stencil rows: edges
    const real* weight;     // the stencil rows: weights
    i64 u0, u1;
    i64 npole;
    int m0;
    int pad_;
    real ca[MAX_PORT_MODELS];
    real cb[MAX_PORT_MODELS];
};
static_assert(sizeof(PortDriveArgs) == 88 + 2 * MAX_PORT_MODELS * sizeof(real),
              "PortDriveArgs layout");

// The surface ports' virtual cells with poles, every run at once (kernels/dispersive.cu
// port_poles): one thread per cell of [0, n).
struct PortPolesArgs {
    const DispersiveArgs* runs;  // per run (a model's cells in one slab): its group's arguments
    const unsigned* run;         // per virtual cell with poles: its run
    i64 n;                       // virtual cells with poles
};
static_assert(sizeof(PortPolesArgs) == 24, "PortPolesArgs layout");

// Every kernel and its argument struct, in the order of `Kernel` in src/backend/cuda/args.rs.
#define YEE_KERNELS(K)          \
    K(update_h, UpdateArgs)     \
    K(update_e, UpdateArgs)     \
    K(cpml_x_h, CpmlArgs)       \
    K(cpml_y_h, CpmlArgs)       \
    K(cpml_z_h, CpmlArgs)       \
    K(cpml_x_e, CpmlArgs)       \
    K(cpml_y_e, CpmlArgs)       \
    K(cpml_z_e, CpmlArgs)       \
    K(inject_source, SourceArgs) \
    K(zero_pec, PecArgs)        \
    K(probe_gather, ProbeArgs)  \
    K(snapshot_gather, GatherArgs) \
    K(check_finite, FiniteArgs) \
    K(copy_negated, NegateArgs) \
    K(flux_dft, FluxArgs)          \
    K(flux_rows, FluxRowsArgs)     \
    K(dispersive, DispersiveArgs) \
    K(tfsf_incident, TfsfIncidentArgs) \
    K(tfsf_correct, TfsfArgs) \
    K(conformal_h, ConformalArgs) \
    K(lumped, LumpedArgs) \
    K(bloch_gather, BlochArgs) \
    K(bloch_correct, BlochArgs) \
    K(port_increment, PortEdgesArgs) \
    K(port_drive, PortDriveArgs) \
    K(port_gather, PortEdgesArgs) \
    K(port_poles, PortPolesArgs)

// The global index of one thread in a 1-D launch.
__device__ __forceinline__ i64 thread_index() {
    return (i64)blockIdx.x * blockDim.x + threadIdx.x;
}

// Global index along y or z of layer l of an axis with lo + hi layers (pml.rs global_index).
__device__ __forceinline__ int layer_global(int l, int lo, int hi, int n) {
    return l < lo ? l : n - hi + (l - lo);
}

#endif
