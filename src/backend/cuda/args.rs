//! The kernels and their arguments: `#[repr(C)]` mirrors of the structs in
//! `kernels/common.cuh`, field for field (the C side pins the sizes with `static_assert`s, the
//! tests here pin the Rust side to the same numbers).
//!
//! Device pointers travel as `u64` addresses, so the same struct serves a CUDA launch (a
//! `CUdeviceptr`) and a host launch (an ordinary pointer).

/// A device address (a `CUdeviceptr` on a GPU, a plain pointer on the host).
pub type Ptr = u64;

/// Every kernel in `kernels/*.cu`, in the order of `YEE_KERNELS` in `kernels/common.cuh`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// H^{n-1/2} -> H^{n+1/2}, curl of E (kernels/update.cu).
    UpdateH,
    /// E^n -> E^{n+1}, curl of H with the material table (kernels/update.cu).
    UpdateE,
    /// CPML correction of Hy, Hz in the x layers.
    CpmlXH,
    /// CPML correction of Hx, Hz in the y layers.
    CpmlYH,
    /// CPML correction of Hx, Hy in the z layers.
    CpmlZH,
    /// CPML correction of Ey, Ez in the x layers.
    CpmlXE,
    /// CPML correction of Ex, Ez in the y layers.
    CpmlYE,
    /// CPML correction of Ex, Ey in the z layers.
    CpmlZE,
    /// E -= cb J over a source's cells.
    InjectSource,
    /// Tangential E = 0 on PEC minimum faces.
    ZeroPec,
    /// Probe samples into a staging buffer.
    ProbeGather,
    /// A strided snapshot region into a staging buffer.
    SnapshotGather,
    /// NaN / Inf flag.
    CheckFinite,
    /// dst = -src (the PMC mirror halo).
    CopyNegated,
    /// Running DFTs of a flux plane's tangential fields (kernels/flux.cu).
    FluxDft,
    /// A flux patch part's spectrum sums, row by row (kernels/flux.cu).
    FluxRows,
    /// The poles of one dispersive group: E -= g r, then the pole state advances
    /// (kernels/dispersive.cu).
    Dispersive,
    /// The TF/SF source's 1-D incident grid, one half step (kernels/tfsf.cu).
    TfsfIncident,
    /// One TF/SF correction group's points (kernels/tfsf.cu).
    TfsfCorrect,
    /// The conformal PEC pass: the cut faces' H after the curl (kernels/conformal.cu).
    ConformalH,
    /// A lumped RLC element's cells, a cell pass's device form (kernels/lumped.cu).
    Lumped,
    /// One Bloch axis's images of a slab into a buffer (kernels/bloch.cu).
    BlochGather,
    /// One Bloch axis's correction of the cells next to its face (kernels/bloch.cu).
    BlochCorrect,
    /// The surface ports' edges: each edge's increment (kernels/ports.cu).
    PortIncrement,
    /// The surface ports' virtual cells: each one's drive into its model's update.
    PortDrive,
    /// The surface ports' edges: each edge's E from the ports that touch it.
    PortGather,
    /// The surface ports' virtual cells with poles, every run in one launch
    /// (kernels/dispersive.cu).
    PortPoles,
}

impl Kernel {
    /// All kernels, in `YEE_KERNELS` order.
    pub const ALL: [Kernel; 27] = [
        Kernel::UpdateH,
        Kernel::UpdateE,
        Kernel::CpmlXH,
        Kernel::CpmlYH,
        Kernel::CpmlZH,
        Kernel::CpmlXE,
        Kernel::CpmlYE,
        Kernel::CpmlZE,
        Kernel::InjectSource,
        Kernel::ZeroPec,
        Kernel::ProbeGather,
        Kernel::SnapshotGather,
        Kernel::CheckFinite,
        Kernel::CopyNegated,
        Kernel::FluxDft,
        Kernel::FluxRows,
        Kernel::Dispersive,
        Kernel::TfsfIncident,
        Kernel::TfsfCorrect,
        Kernel::ConformalH,
        Kernel::Lumped,
        Kernel::BlochGather,
        Kernel::BlochCorrect,
        Kernel::PortIncrement,
        Kernel::PortDrive,
        Kernel::PortGather,
        Kernel::PortPoles,
    ];

    /// The `extern "C"` name of the kernel.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::UpdateH => "update_h",
            Kernel::UpdateE => "update_e",
            Kernel::CpmlXH => "cpml_x_h",
            Kernel::CpmlYH => "cpml_y_h",
            Kernel::CpmlZH => "cpml_z_h",
            Kernel::CpmlXE => "cpml_x_e",
            Kernel::CpmlYE => "cpml_y_e",
            Kernel::CpmlZE => "cpml_z_e",
            Kernel::InjectSource => "inject_source",
            Kernel::ZeroPec => "zero_pec",
            Kernel::ProbeGather => "probe_gather",
            Kernel::SnapshotGather => "snapshot_gather",
            Kernel::CheckFinite => "check_finite",
            Kernel::CopyNegated => "copy_negated",
            Kernel::FluxDft => "flux_dft",
            Kernel::FluxRows => "flux_rows",
            Kernel::Dispersive => "dispersive",
            Kernel::TfsfIncident => "tfsf_incident",
            Kernel::TfsfCorrect => "tfsf_correct",
            Kernel::ConformalH => "conformal_h",
            Kernel::Lumped => "lumped",
            Kernel::BlochGather => "bloch_gather",
            Kernel::BlochCorrect => "bloch_correct",
            Kernel::PortIncrement => "port_increment",
            Kernel::PortDrive => "port_drive",
            Kernel::PortGather => "port_gather",
            Kernel::PortPoles => "port_poles",
        }
    }
}

/// Grid and block dimensions of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Blocks along x, y, z.
    pub grid: [u32; 3],
    /// Threads per block along x, y, z.
    pub block: [u32; 3],
}

/// Threads per block of every launch (default; `YEE_CUDA_BLOCK` overrides it for tuning).
pub const BLOCK: u32 = 256;

/// Column-marching launches aim for about this many threads, splitting the x range into
/// chunks when the columns alone are too few (default; `YEE_CUDA_TARGET_THREADS` overrides it
/// for tuning). On an H200 a 1000^3 f32 cube ran 45.1 Gcells/s with 16M threads (x chunks of
/// 59 planes) and 44.2 with 4M (chunks of 250) in the same run (docs/performance.md).
pub const TARGET_THREADS: u64 = 1 << 24;

/// (threads per block, target threads) in force: the defaults, or the tuning variables
/// `YEE_CUDA_BLOCK` (a multiple of 32 up to 1024) and `YEE_CUDA_TARGET_THREADS`.
pub fn tuning() -> (u32, u64) {
    let t = crate::tuning::tuning();
    (
        t.cuda_block.unwrap_or(BLOCK),
        t.cuda_target_threads.unwrap_or(TARGET_THREADS),
    )
}

impl Dims {
    /// One thread per element of `n` (1-D), `ys` copies along grid y.
    pub fn elements(n: u64, ys: u32) -> Dims {
        let block = tuning().0;
        let blocks = n.div_ceil(block as u64).max(1);
        assert!(
            blocks < u32::MAX as u64,
            "launch of {n} threads is too large"
        );
        Dims {
            grid: [blocks as u32, ys, 1],
            block: [block, 1, 1],
        }
    }

    /// One thread per (j, k) column of `ncol`, marching over `planes` planes in chunks:
    /// returns the launch and the chunk length (planes per grid row).
    pub fn columns(ncol: u64, planes: u32) -> (Dims, u32) {
        let chunks = tuning()
            .1
            .div_ceil(ncol.max(1))
            .clamp(1, planes.max(1) as u64) as u32;
        // gridDim.y is at most 65535.
        let chunk = planes.div_ceil(chunks).max(planes.div_ceil(65535)).max(1);
        let rows = planes.div_ceil(chunk).max(1);
        let mut d = Dims::elements(ncol, rows);
        d.grid[1] = rows;
        (d, chunk)
    }
}

/// Arguments of `update_h` / `update_e`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct UpdateArgs<T> {
    pub ex: Ptr,
    pub ey: Ptr,
    pub ez: Ptr,
    pub hx: Ptr,
    pub hy: Ptr,
    pub hz: Ptr,
    pub mx: Ptr,
    pub my: Ptr,
    pub mz: Ptr,
    /// H material ids (0 unless `magnetic`).
    pub hmx: Ptr,
    pub hmy: Ptr,
    pub hmz: Ptr,
    pub plane: i64,
    pub ny: i32,
    pub nz: i32,
    pub p0: i32,
    pub p1: i32,
    pub chunk: i32,
    pub y_lo: i32,
    pub y_hi: i32,
    pub z_lo: i32,
    pub z_hi: i32,
    /// 1 when some material is magnetic: H = hca H - hcb curl E per H material id.
    pub magnetic: i32,
    /// The derivatives' steps along x (offset so that local plane p reads entry p), y, z:
    /// device tables of the operator's `inv_primal` (H) or `inv_dual` (E).
    pub ix: Ptr,
    pub iy: Ptr,
    pub iz: Ptr,
    pub ch: T,
    pub pad: T,
}

/// Arguments of the six CPML kernels.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct CpmlArgs<T> {
    pub ex: Ptr,
    pub ey: Ptr,
    pub ez: Ptr,
    pub hx: Ptr,
    pub hy: Ptr,
    pub hz: Ptr,
    pub psi0: Ptr,
    pub psi1: Ptr,
    pub coef: Ptr,
    pub mx: Ptr,
    pub my: Ptr,
    pub mz: Ptr,
    /// H material ids (0 unless `magnetic`).
    pub hmx: Ptr,
    pub hmy: Ptr,
    pub hmz: Ptr,
    pub plane: i64,
    pub ny: i32,
    pub nz: i32,
    pub p0: i32,
    pub p1: i32,
    pub lo: i32,
    pub hi: i32,
    pub n_axis: i32,
    pub l0: i32,
    pub q0: i32,
    /// H passes: 1 when the correction's factor is the H cell's hcb, 0 when it is `ch`.
    pub magnetic: i32,
    pub ch: T,
    pub pad: T,
}

/// Arguments of `inject_source`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SourceArgs<T> {
    pub f: Ptr,
    pub mat: Ptr,
    /// A mode source's weights from the launch's first cell on (one per cell of the launch, in
    /// its C order: `f -= c (j w[t])`); 0 for a uniform sheet (`f -= c j`).
    pub w: Ptr,
    pub plane: i64,
    pub nz: i32,
    pub p0: i32,
    pub p1: i32,
    pub y0: i32,
    pub y1: i32,
    pub z0: i32,
    pub z1: i32,
    /// 1 for a magnetic sheet (H -= ch j), 0 for an electric one (E -= cb(mat) j).
    pub magnetic: i32,
    pub j: T,
    /// dt / mu0, the coefficient of a magnetic sheet.
    pub ch: T,
}

/// Arguments of `zero_pec`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PecArgs {
    pub ex: Ptr,
    pub ey: Ptr,
    pub ez: Ptr,
    pub plane: i64,
    pub ny: i32,
    pub nz: i32,
    pub p0: i32,
    pub p1: i32,
    pub x_face: i32,
    pub y_face: i32,
    pub z_face: i32,
    pub pad: i32,
}

/// Arguments of `probe_gather`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeArgs {
    pub src: Ptr,
    pub out: Ptr,
    pub n: i32,
    pub pad: i32,
}

/// Arguments of `snapshot_gather`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct GatherArgs {
    pub f: Ptr,
    pub out: Ptr,
    pub plane: i64,
    pub out0: i64,
    pub nz: i32,
    pub p0: i32,
    pub cx: i32,
    pub cy: i32,
    pub cz: i32,
    pub sx: i32,
    pub sy: i32,
    pub sz: i32,
    pub y0: i32,
    pub z0: i32,
}

/// Arguments of `check_finite`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FiniteArgs {
    pub f: [Ptr; 6],
    pub flag: Ptr,
    pub begin: i64,
    pub count: i64,
}

/// Arguments of `copy_negated`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct NegateArgs {
    pub dst: Ptr,
    pub src: Ptr,
    pub n: i64,
}

/// Frequencies one `flux_dft` launch accumulates (`FLUX_FREQS_PER_LAUNCH` in
/// `kernels/common.cuh`): their weights travel in [`FluxArgs::w`].
pub const FLUX_FREQS_PER_LAUNCH: usize = 32;

/// Arguments of `flux_dft`: one part of a flux patch in one slab, frequencies
/// `[f0, f0 + nw)` of its `nf`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FluxArgs {
    pub eb: Ptr,
    pub ec: Ptr,
    pub hb0: Ptr,
    pub hb1: Ptr,
    pub hc0: Ptr,
    pub hc1: Ptr,
    pub acc: Ptr,
    pub su: i64,
    pub sv: i64,
    pub cells: i32,
    pub nv: i32,
    pub nf: i32,
    pub f0: i32,
    pub nw: i32,
    pub pad: i32,
    pub below: f64,
    pub above: f64,
    /// This sample's weights of frequencies `f0..f0 + nw`:
    /// [`crate::flux::sample_weights`].
    pub w: [[f64; 4]; FLUX_FREQS_PER_LAUNCH],
}

/// Arguments of `flux_rows`: one flux patch part's spectrum sums, row by row.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FluxRowsArgs {
    /// The part's accumulators ([`FluxArgs::acc`]).
    pub acc: Ptr,
    /// The part's quadrature weights, `[2][cells]`.
    pub w: Ptr,
    /// `[nf][rows][4]` sums.
    pub out: Ptr,
    pub cells: i32,
    /// Cells per row.
    pub row: i32,
    pub nf: i32,
    pub pad: i32,
}

/// Poles per material the dispersive kernel takes (`MAX_POLES` in `kernels/common.cuh`).
pub const MAX_POLES: usize = crate::model::MAX_POLES;

/// `PoleArgs::kind` of a Lorentz pole (c = mj, mp, alpha, beta, kappa, half_dt).
pub const POLE_LORENTZ: i32 = 0;
/// `PoleArgs::kind` of a Drude pole (c = mj, alpha, kappa).
pub const POLE_DRUDE: i32 = 1;
/// `PoleArgs::kind` of a Debye pole (c = mp, a, b).
pub const POLE_DEBYE: i32 = 2;

/// One pole of the dispersive kernel: its kind and up to six coefficients.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PoleArgs<T> {
    pub kind: i32,
    pub pad: i32,
    pub c: [T; 6],
}

impl<T: crate::real::Real> PoleArgs<T> {
    /// The kernel's form of an operator pole.
    pub fn of(p: &crate::operator::PoleOp<T>) -> Self {
        use crate::operator::PoleOp;
        let z = T::ZERO;
        let (kind, c) = match *p {
            PoleOp::Lorentz {
                mj,
                mp,
                alpha,
                beta,
                kappa,
                half_dt,
            } => (POLE_LORENTZ, [mj, mp, alpha, beta, kappa, half_dt]),
            PoleOp::Drude { mj, alpha, kappa } => (POLE_DRUDE, [mj, alpha, kappa, z, z, z]),
            PoleOp::Debye { mp, a, b } => (POLE_DEBYE, [mp, a, b, z, z, z]),
        };
        PoleArgs { kind, pad: 0, c }
    }
}

/// Arguments of `dispersive`: cells [q0, q1) of one group of `n` cells.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct DispersiveArgs<T> {
    /// The component's first owned value (the field plus one plane).
    pub e: Ptr,
    /// u32 cell indices into the owned values.
    pub cells: Ptr,
    pub e_prev: Ptr,
    /// `[slot][n]`.
    pub state: Ptr,
    pub n: i64,
    pub q0: i64,
    pub q1: i64,
    pub npoles: i32,
    /// 0 for a material with poles; a series mixture's count of parts.
    pub nparts: i32,
    /// cb eps0 of the material.
    pub g: T,
    pub pad_g: T,
    /// A series mixture's parts (`crate::operator::SeriesPartOp`).
    pub parts: [SeriesPartArgs<T>; MAX_SERIES_PARTS],
    /// The material's poles, or the parts' poles back to back.
    pub poles: [PoleArgs<T>; MAX_GROUP_POLES],
}

/// Parts of a series mixture the dispersive kernel takes (`MAX_SERIES_PARTS` in
/// `kernels/common.cuh`): the anisotropic average's three.
pub const MAX_SERIES_PARTS: usize = 3;
/// Poles of one group the dispersive kernel takes: a series mixture of a pair's two materials
/// and their mean holds each pole twice.
pub const MAX_GROUP_POLES: usize = 2 * MAX_POLES;

/// One part of a series mixture in the dispersive kernel.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SeriesPartArgs<T> {
    pub npoles: i32,
    pub pad: i32,
    pub weight: T,
    pub ca: T,
    pub share: T,
    pub g: T,
}

impl<T: crate::real::Real> DispersiveArgs<T> {
    /// The kernel's arguments for material `d`'s groups, the group's arrays left empty; None
    /// when the kernel cannot take it (more poles or parts than it holds).
    pub fn of(d: &crate::operator::DispersiveOp<T>) -> Option<Self> {
        let mut a = DispersiveArgs::<T>::default();
        let mut poles = Vec::new();
        if d.series.is_empty() {
            a.npoles = d.poles.len() as i32;
            a.g = d.g;
            poles.extend(&d.poles);
        } else {
            if d.series.len() > MAX_SERIES_PARTS {
                return None;
            }
            a.nparts = d.series.len() as i32;
            for (arg, part) in a.parts.iter_mut().zip(&d.series) {
                *arg = SeriesPartArgs {
                    npoles: part.poles.len() as i32,
                    pad: 0,
                    weight: part.weight,
                    ca: part.ca,
                    share: part.share,
                    g: part.g,
                };
                poles.extend(&part.poles);
            }
        }
        if poles.len() > MAX_GROUP_POLES || (d.series.is_empty() && poles.len() > MAX_POLES) {
            return None;
        }
        for (slot, p) in a.poles.iter_mut().zip(poles) {
            *slot = PoleArgs::of(p);
        }
        Some(a)
    }
}

/// Arguments of `tfsf_incident`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TfsfIncidentArgs<T> {
    pub e: Ptr,
    pub h: Ptr,
    /// Nodes.
    pub n: i64,
    /// 1 in the H half step (advance e, drive node 0), 0 in the E half step (advance h).
    pub h_phase: i32,
    pub pad: i32,
    /// The 1-D Courant number.
    pub s: T,
    /// e_0 at this half step.
    pub drive: T,
}

/// Arguments of `tfsf_correct`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct TfsfArgs<T> {
    /// The corrected component, with its halo planes.
    pub f: Ptr,
    /// Its material ids over the owned cells.
    pub mat: Ptr,
    /// u32 cell offsets among the owned cells.
    pub off: Ptr,
    /// u32 1-D nodes.
    pub node: Ptr,
    pub w: Ptr,
    pub fac: Ptr,
    /// The 1-D array read (h for E points, e for H points).
    pub inc: Ptr,
    pub plane: i64,
    pub q0: i64,
    pub q1: i64,
    /// 1 for E points, 0 for H points.
    pub electric: i32,
    /// H points: 1 when some material is magnetic (cb from c_hcb), else 0 (ch).
    pub magnetic: i32,
    pub ch: T,
    pub pad: T,
}

/// Arguments of `conformal_h`: one slab's cut faces of Hx, then Hy, then Hz in one table,
/// faces `q0[c]..q1[c]` of component c on the launch's planes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ConformalArgs {
    pub ex: Ptr,
    pub ey: Ptr,
    pub ez: Ptr,
    pub hx: Ptr,
    pub hy: Ptr,
    pub hz: Ptr,
    /// u32 cell offsets among the owned cells, one per face.
    pub off: Ptr,
    /// The faces' four weights each ([`crate::operator::ConformalOp`]).
    pub w: Ptr,
    pub plane: i64,
    pub q0: [i64; 3],
    pub q1: [i64; 3],
    pub nz: i32,
    pub pad: i32,
}

/// Arguments of `lumped`: one lumped element's cells on planes `[p0, p1)` of one slab.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct LumpedArgs {
    /// The element's component, with its halo planes.
    pub f: Ptr,
    /// The slab's state, `[slot][cells]`: E^n, then I_L (parallel) or I, q (series).
    pub state: Ptr,
    /// The slab's coefficient rows, eight values per cell in the run's precision.
    pub coef: Ptr,
    pub plane: i64,
    /// The slab's cells of the element's box (the stride between state slots).
    pub cells: i64,
    /// The launch's first cell among them (of the state and of the rows).
    pub first: i64,
    pub nz: i32,
    pub p0: i32,
    pub p1: i32,
    pub y0: i32,
    pub y1: i32,
    pub z0: i32,
    pub z1: i32,
    /// 1 for a series element, 0 for a parallel one.
    pub series: i32,
}

/// Arguments of `bloch_gather` and `bloch_correct`: one Bloch axis of one slab (the images
/// of the half step from `base`, `len` per term; the correction on planes `[p0, p1)`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct BlochArgs<T> {
    pub ex: Ptr,
    pub ey: Ptr,
    pub ez: Ptr,
    pub hx: Ptr,
    pub hy: Ptr,
    pub hz: Ptr,
    pub mx: Ptr,
    pub my: Ptr,
    pub mz: Ptr,
    pub hmx: Ptr,
    pub hmy: Ptr,
    pub hmz: Ptr,
    /// This field set's images (the gather writes them, the correction reads them).
    pub own: Ptr,
    /// The other set's images, in the same order.
    pub other: Ptr,
    pub plane: i64,
    /// The axis's first image in the slab's list.
    pub base: i64,
    /// Images per term of the axis.
    pub len: i64,
    pub ny: i32,
    pub nz: i32,
    /// Owned planes of the slab.
    pub n: i32,
    pub p0: i32,
    pub p1: i32,
    pub axis: i32,
    /// 1 in the H half step (images beyond the maximum face), 0 in the E half step.
    pub high: i32,
    /// 1 when the H factor is the material's (`c_hcb`), 0 for dt / mu0.
    pub magnetic: i32,
    /// cos - 1 of the rotation.
    pub cm1: T,
    /// sin of the rotation, signed for the field set and the half step.
    pub s: T,
    /// 1 / the step across the face.
    pub step: T,
    /// dt / mu0.
    pub ch: T,
}

/// Arguments of `port_increment` and `port_gather`: the surface ports' edges
/// (`kernels/ports.cu`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PortEdgesArgs {
    /// Per edge: the address of its E value in its slab.
    pub place: Ptr,
    /// Per edge: ca and 1/cb of its painted material.
    pub coef: Ptr,
    /// Per edge: E at the last step.
    pub e_prev: Ptr,
    /// Per edge: the increment over cb.
    pub curl: Ptr,
    /// Per edge: the end of its gather row.
    pub end: Ptr,
    /// The gather rows' virtual cells and weights.
    pub cell: Ptr,
    pub weight: Ptr,
    /// Per virtual cell: its output.
    pub v: Ptr,
    /// Edges.
    pub n: i64,
    /// `port_increment`: 1 takes only E^n = E (after a state import).
    pub refresh: i32,
    pub pad_: i32,
}

/// Models one `port_drive` launch takes (`MAX_PORT_MODELS` in `kernels/common.cuh`).
pub const MAX_PORT_MODELS: usize = crate::model::PORT_MODELS_PER_LAUNCH;

/// Arguments of `port_drive`: the virtual cells `[u0, u1)` of models
/// `[m0, m0 + MAX_PORT_MODELS)`, whose (ca, cb) are `ca[m - m0]`, `cb[m - m0]`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PortDriveArgs<T> {
    pub v: Ptr,
    /// Per virtual cell with poles (`u < npole`): E at the last step.
    pub e_prev: Ptr,
    pub curl: Ptr,
    pub model: Ptr,
    /// Per virtual cell: the end of its stencil row; the rows' edges and weights.
    pub end: Ptr,
    pub edge: Ptr,
    pub weight: Ptr,
    pub u0: i64,
    pub u1: i64,
    /// Virtual cells with poles (the first ones).
    pub npole: i64,
    pub m0: i32,
    pub pad_: i32,
    pub ca: [T; MAX_PORT_MODELS],
    pub cb: [T; MAX_PORT_MODELS],
}

/// Arguments of `port_poles`: the surface ports' virtual cells with poles, `[0, n)`, each in
/// the run `run[u]`, whose group's arguments are `runs[run[u]]` in device memory (`e` and
/// `e_prev` at the run's first cell, `q0` its index, `n` its length).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PortPolesArgs {
    pub runs: Ptr,
    pub run: Ptr,
    pub n: i64,
}

/// The argument sizes `kernels/common.cuh` asserts, for `real` of `real_bytes` bytes, in the
/// order of `yee_host_arg_size` (kernels/host_launch.h).
pub fn arg_sizes(real_bytes: usize) -> [usize; 19] {
    [
        168 + 2 * real_bytes,
        168 + 2 * real_bytes,
        64 + 2 * real_bytes,
        64,
        24,
        72,
        72,
        24,
        112 + 32 * FLUX_FREQS_PER_LAUNCH,
        64 + 2 * real_bytes
            + MAX_SERIES_PARTS * (8 + 4 * real_bytes)
            + MAX_GROUP_POLES * (8 + 6 * real_bytes),
        32 + 2 * real_bytes,
        88 + 2 * real_bytes,
        40,
        128,
        80,
        168 + 4 * real_bytes,
        80,
        88 + 2 * MAX_PORT_MODELS * real_bytes,
        24,
    ]
}

/// The sizes of the Rust mirrors for `T`, in the same order as [`arg_sizes`].
pub fn rust_arg_sizes<T>() -> [usize; 19] {
    use std::mem::size_of;
    [
        size_of::<UpdateArgs<T>>(),
        size_of::<CpmlArgs<T>>(),
        size_of::<SourceArgs<T>>(),
        size_of::<PecArgs>(),
        size_of::<ProbeArgs>(),
        size_of::<GatherArgs>(),
        size_of::<FiniteArgs>(),
        size_of::<NegateArgs>(),
        size_of::<FluxArgs>(),
        size_of::<DispersiveArgs<T>>(),
        size_of::<TfsfIncidentArgs<T>>(),
        size_of::<TfsfArgs<T>>(),
        size_of::<FluxRowsArgs>(),
        size_of::<ConformalArgs>(),
        size_of::<LumpedArgs>(),
        size_of::<BlochArgs<T>>(),
        size_of::<PortEdgesArgs>(),
        size_of::<PortDriveArgs<T>>(),
        size_of::<PortPolesArgs>(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_structs_match_the_sizes_the_kernels_assert() {
        assert_eq!(rust_arg_sizes::<f32>(), arg_sizes(4));
        assert_eq!(rust_arg_sizes::<f64>(), arg_sizes(8));
    }

    #[test]
    fn the_plan_counts_a_port_run_as_the_dispersive_kernels_arguments() {
        use crate::plan::bytes::gpu_port_run_bytes;
        use std::mem::size_of;
        assert_eq!(
            size_of::<DispersiveArgs<f32>>() as u64,
            gpu_port_run_bytes(4)
        );
        assert_eq!(
            size_of::<DispersiveArgs<f64>>() as u64,
            gpu_port_run_bytes(8)
        );
    }

    #[test]
    fn every_kernel_sits_at_its_own_index_in_the_list() {
        // The driver and the host launchers index their loaded functions by `kernel as usize`.
        for (i, k) in Kernel::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i, "{}", k.name());
        }
    }

    #[test]
    fn column_launch_covers_every_plane_once() {
        for (ncol, planes) in [
            (6400u64, 80u32),
            (1_000_000, 1000),
            (10, 3),
            (1, 1),
            (5_000_000, 7),
        ] {
            let (d, chunk) = Dims::columns(ncol, planes);
            assert!(d.grid[0] as u64 * d.block[0] as u64 >= ncol);
            assert!(d.grid[1] * chunk >= planes && (d.grid[1] - 1) * chunk < planes);
            assert!(d.grid[1] <= 65535);
        }
    }
}
