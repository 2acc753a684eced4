//! The scene file as written: serde structs that mirror the TOML one to one.
//!
//! Every value that a later check may complain about is wrapped in `Spanned`, so the
//! message can point at the exact line and column. The reader (`super::read`) checks every key
//! against these structs' field lists before deserialising, so all unknown keys are reported
//! in one pass; `deny_unknown_fields` stays as a second line of defence.

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// The top-level keys of a scene file.
pub const SCENE_KEYS: [&str; 9] = [
    "simulation",
    "boundaries",
    "materials",
    "geometry",
    "source",
    "monitor",
    "scan",
    "refine",
    "sparameters",
];

/// The keys a table of the scene must have: the fields of its struct that are not `Option`
/// (a unit test checks them against serde). The reader reports every missing one at once;
/// serde alone would stop at the first.
pub trait Required {
    /// The required keys, as written in the file.
    const REQUIRED: &'static [&'static str];
}

macro_rules! required {
    ($($t:ty => [$($k:literal),*]),* $(,)?) => {
        $(impl Required for $t {
            const REQUIRED: &'static [&'static str] = &[$($k),*];
        })*
    };
}

required! {
    SimulationSection => ["cell_size", "size"],
    BoundariesSection => [],
    BoundarySpec => ["type"],
    MaterialSpec => [],
    LorentzSpec => ["delta_epsilon", "frequency"],
    DrudeSpec => ["frequency"],
    DebyeSpec => ["delta_epsilon", "relaxation_time"],
    GeometrySpec => ["shape"],
    SourceSpec => ["type", "waveform"],
    WaveformSpec => ["type", "frequency"],
    MonitorSpec => ["type", "name"],
    FrequencySpec => ["min", "max", "count"],
    BoxSpec => ["center", "size"],
    AngleSpec => ["min", "max", "count"],
    ScanSection => ["traces"],
    SParametersSection => ["ports"],
    RefineSpec => ["box", "cell_size"],
}

/// The whole scene file, as far as it could be read. Parts that could not be read (a wrong
/// type, a missing required key) were reported by the reader and are left out here, so that the
/// checks after reading neither repeat nor build on them.
#[derive(Debug)]
pub struct SceneFile {
    /// `[simulation]`: grid, time stepping and precision.
    pub simulation: Spanned<SimulationSection>,
    /// `[boundaries]`: what terminates each face of the domain.
    pub boundaries: Option<Spanned<BoundariesSection>>,
    /// True when a `[boundaries]` table was written but could not be read.
    pub boundaries_unread: bool,
    /// `[materials]`: named materials that geometry refers to.
    pub materials: BTreeMap<Spanned<String>, Spanned<MaterialSpec>>,
    /// Materials that were defined but could not be read (geometry may still name them).
    pub unread_materials: Vec<String>,
    /// `[[geometry]]`: objects painted in order, later over earlier.
    pub geometry: Items<GeometrySpec>,
    /// `[[source]]`: current sources.
    pub source: Items<SourceSpec>,
    /// `[[monitor]]`: what is recorded.
    pub monitor: Items<MonitorSpec>,
}

/// The entries of an array of tables that could be read, each with its index in the file (so
/// that `source[2]` keeps its name when `source[1]` could not be read).
#[derive(Debug)]
pub struct Items<T> {
    /// (index in the file, entry).
    pub entries: Vec<(usize, Spanned<T>)>,
    /// Entries in the file, read or not.
    pub written: usize,
}

impl<T> Default for Items<T> {
    fn default() -> Self {
        Items {
            entries: Vec::new(),
            written: 0,
        }
    }
}

impl<T> Items<T> {
    /// The entries read, with their index in the file.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Spanned<T>)> {
        self.entries.iter().map(|(n, t)| (*n, t))
    }
    /// True when the file has no entry at all (read or not).
    pub fn is_empty(&self) -> bool {
        self.written == 0
    }
    /// True when every entry written could be read.
    pub fn complete(&self) -> bool {
        self.entries.len() == self.written
    }
}

/// `[simulation]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulationSection {
    /// Run name; the default output file is `<name>.h5`.
    pub name: Option<Spanned<String>>,
    /// Unit of every length in the file: m, mm, um or nm.
    pub length_unit: Option<Spanned<String>>,
    /// Cell size: one number or `[dx, dy, dz]`.
    pub cell_size: Spanned<toml::Value>,
    /// Domain size `[sx, sy, sz]`, including the PML, centred on the origin.
    pub size: Spanned<Vec<f64>>,
    /// Number of time steps (exclusive with `duration`): a whole number, which may be written
    /// as a float (`1e5`).
    pub steps: Option<Spanned<f64>>,
    /// Simulated time in seconds (exclusive with `steps`).
    pub duration: Option<Spanned<f64>>,
    /// Fraction of the 3D Courant stability limit, in (0, 1].
    pub courant: Option<Spanned<f64>>,
    /// Floating-point precision of the fields: f32 or f64.
    pub precision: Option<Spanned<String>>,
    /// Subpixel smoothing of material interfaces (default true).
    pub subpixel: Option<Spanned<bool>>,
    /// On a non-uniform mesh, the largest ratio of neighbouring cells along an axis, in
    /// (1, 2] (default 1.25).
    pub grading: Option<Spanned<f64>>,
    /// Refine automatically so that every object is resolved with at least this many cells
    /// per shortest wavelength in its material at the highest source frequency (and thin
    /// objects get three cells across).
    pub cells_per_wavelength: Option<Spanned<f64>>,
}

/// `[boundaries]`: a default plus per-face overrides.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundariesSection {
    /// Applies to every face not overridden.
    pub default: Option<Spanned<BoundarySpec>>,
    /// Face overrides.
    pub x_min: Option<Spanned<BoundarySpec>>,
    /// Face override.
    pub x_max: Option<Spanned<BoundarySpec>>,
    /// Face override.
    pub y_min: Option<Spanned<BoundarySpec>>,
    /// Face override.
    pub y_max: Option<Spanned<BoundarySpec>>,
    /// Face override.
    pub z_min: Option<Spanned<BoundarySpec>>,
    /// Face override.
    pub z_max: Option<Spanned<BoundarySpec>>,
}

/// One face's boundary: `{ type = "pml", cells = 10 }`, `{ type = "pec" }`, ...
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct BoundarySpec {
    /// pml | pec | pmc | periodic | bloch.
    #[serde(rename = "type")]
    pub kind: Spanned<String>,
    /// Bloch: the phase per period in periods of 2 pi (k L / 2 pi for a wave of wavevector k
    /// along the axis).
    pub phase: Option<Spanned<f64>>,
    /// PML thickness in cells.
    pub cells: Option<Spanned<i64>>,
    /// Polynomial grading order of sigma and kappa (default 3).
    pub order: Option<Spanned<f64>>,
    /// Peak conductivity as a multiple of the optimal value 0.8 (m+1) / (eta0 d) (default 1).
    pub sigma_factor: Option<Spanned<f64>>,
    /// Peak real stretch kappa (default 1: plain CPML; raise it for evanescent fields).
    pub kappa_max: Option<Spanned<f64>>,
    /// Complex-frequency-shift alpha, expressed as a frequency f_a in Hz with alpha = 2 pi eps0 f_a
    /// at the inner PML face, graded linearly to zero at the outer face.
    pub alpha_frequency: Option<Spanned<f64>>,
}

/// A material: a dielectric with optional conductivity, or a perfect electric conductor.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialSpec {
    /// Relative permittivity (>= 1 is typical; must be > 0).
    pub epsilon: Option<Spanned<f64>>,
    /// Electric conductivity in S/m (>= 0).
    pub conductivity: Option<Spanned<f64>>,
    /// A perfect electric conductor (excludes every other key but `conformal`).
    pub pec: Option<Spanned<bool>>,
    /// Whether its surfaces are placed where they are drawn (the default) or staircased
    /// (`false`): a PEC's by Dey-Mittra cut faces, a curved surface of a material with poles
    /// (a metal) by surface ports (`docs/geometry.md`), which run on the CPU only for now.
    pub conformal: Option<Spanned<bool>>,
    /// Relative permeability (> 0, default 1).
    pub mu: Option<Spanned<f64>>,
    /// Magnetic conductivity in ohm/m (>= 0).
    pub magnetic_conductivity: Option<Spanned<f64>>,
    /// Lorentz poles.
    pub lorentz: Option<Vec<Spanned<LorentzSpec>>>,
    /// Drude poles.
    pub drude: Option<Vec<Spanned<DrudeSpec>>>,
    /// Debye poles.
    pub debye: Option<Vec<Spanned<DebyeSpec>>>,
    /// A material of the library (`yee materials` lists them); excludes epsilon and poles.
    pub library: Option<Spanned<String>>,
    /// With `library`: the band [fmin, fmax] (Hz) the fit must cover, to pick among fits.
    pub band: Option<Spanned<Vec<f64>>>,
}

/// A Lorentz pole: `delta_epsilon w0^2 / (w0^2 - w^2 - i w g)`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LorentzSpec {
    /// Strength (> 0).
    pub delta_epsilon: Spanned<f64>,
    /// w0 / 2pi in Hz (> 0).
    pub frequency: Spanned<f64>,
    /// g / 2pi in Hz (>= 0, default 0).
    pub damping: Option<Spanned<f64>>,
}

/// A Drude pole: `-wp^2 / (w^2 + i w g)`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrudeSpec {
    /// wp / 2pi in Hz (> 0).
    pub frequency: Spanned<f64>,
    /// g / 2pi in Hz (>= 0, default 0).
    pub damping: Option<Spanned<f64>>,
}

/// A Debye pole: `delta_epsilon / (1 - i w tau)`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebyeSpec {
    /// Strength (> 0).
    pub delta_epsilon: Spanned<f64>,
    /// tau in s (> 0).
    pub relaxation_time: Spanned<f64>,
}

/// One `[[geometry]]` object.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeometrySpec {
    /// box | sphere | cylinder | polygon | gds | mesh | voxels.
    pub shape: Spanned<String>,
    /// Name from `[materials]`, or the built-ins `vacuum` and `pec` (every shape but voxels).
    pub material: Option<Spanned<String>>,
    /// Centre (box, sphere, cylinder).
    pub center: Option<Spanned<Vec<f64>>>,
    /// Box edge lengths.
    pub size: Option<Spanned<Vec<f64>>>,
    /// Sphere or cylinder radius.
    pub radius: Option<Spanned<f64>>,
    /// Cylinder length along its axis.
    pub height: Option<Spanned<f64>>,
    /// Cylinder axis: "x", "y", "z" or a vector `[ax, ay, az]`; polygon and gds: the axis
    /// they are extruded along, "x", "y" or "z".
    pub axis: Option<Spanned<toml::Value>>,
    /// Polygon: its vertices `[[u, v], ...]` in the plane normal to `axis`.
    pub vertices: Option<Spanned<Vec<Vec<f64>>>>,
    /// Polygon, gds: the extent `[from, to]` along `axis`.
    pub span: Option<Spanned<Vec<f64>>>,
    /// Polygon, gds: the walls' angle from the axis in degrees (positive narrows towards
    /// `span[1]`; default 0).
    pub sidewall_angle: Option<Spanned<f64>>,
    /// gds, mesh, voxels: the file, relative to the scene file.
    pub file: Option<Spanned<String>>,
    /// gds: the cell (optional when the library has one top cell).
    pub cell: Option<Spanned<String>>,
    /// gds: `[layer, datatype]`.
    pub layer: Option<Spanned<Vec<i64>>>,
    /// gds: user units to length_unit (default: the file's unit); mesh: file units to
    /// length_unit (default 1).
    pub scale: Option<Spanned<f64>>,
    /// mesh: added to every vertex after scaling, in length_unit.
    pub translate: Option<Spanned<Vec<f64>>>,
    /// voxels: the HDF5 dataset (an `.npy` file has one array).
    pub dataset: Option<Spanned<String>>,
    /// voxels: the material of each value (value i is `materials[i]`).
    pub materials: Option<Spanned<Vec<String>>>,
    /// voxels: the box the grid fills, `{ center = [...], size = [...] }`.
    #[serde(rename = "box")]
    pub region: Option<Spanned<BoxSpec>>,
    /// A lumped RLC element across the box instead of a material ([`ElementSpec`]).
    pub element: Option<Spanned<ElementSpec>>,
}

/// One `[[source]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSpec {
    /// dipole | plane_wave | tfsf | mode | lumped_port.
    #[serde(rename = "type")]
    pub kind: Spanned<String>,
    /// Mode source: its name, also its port name in `[sparameters]` (default `source<i>`).
    pub name: Option<Spanned<String>>,
    /// Mode source: which mode, an index from 0 by decreasing n_eff (default 0), or
    /// `{ neff = 2.4 }` for the mode nearest that n_eff.
    pub mode: Option<Spanned<toml::Value>>,
    /// Mode source: solve the profile at this many frequencies across the band and interpolate
    /// between them (default 1: the centre frequency's profile for the whole band).
    pub profiles: Option<Spanned<i64>>,
    /// Dipole: the E component driven (Ex, Ey, Ez).
    pub component: Option<Spanned<String>>,
    /// Dipole: position `[x, y, z]`; plane wave: coordinate of the sheet along its direction.
    pub position: Option<Spanned<toml::Value>>,
    /// Plane wave: +x, -x, +y, -y, +z, -z; TF/SF: one of those or a vector `[kx, ky, kz]`.
    pub direction: Option<Spanned<toml::Value>>,
    /// Plane wave: the E component driven, transverse to the direction; TF/SF: a component
    /// or a vector `[ex, ey, ez]` perpendicular to the direction.
    pub polarization: Option<Spanned<toml::Value>>,
    /// TF/SF: the total-field box `{ center = [...], size = [...] }`; mode source: its plane,
    /// a box with one zero extent.
    #[serde(rename = "box")]
    pub region: Option<Spanned<BoxSpec>>,
    /// Time dependence.
    pub waveform: Spanned<WaveformSpec>,
    /// Dipole: peak current density in A/m^2; one-way plane wave: peak incident E in V/m;
    /// two-way plane wave: peak current density of the sheet in A/m^2 (default 1).
    pub amplitude: Option<Spanned<f64>>,
    /// Plane wave: a plain electric current sheet radiating both ways (default false: a
    /// one-way Huygens sheet).
    pub two_way: Option<Spanned<bool>>,
    /// Oblique plane wave: `"auto"` (the default), the wave sets the Bloch phase of the
    /// periodic axes it tilts towards from its direction at its centre frequency.
    pub bloch: Option<Spanned<String>>,
    /// Dipole in a `[scan]`: `[dx, dy, dz]`, how far the source moves from one trace to the
    /// next (gprMax's `#src_steps`).
    pub scan_step: Option<Spanned<Vec<f64>>>,
    /// Lumped port: its reference impedance in ohm, a number or `[re, im]` (default 50); the
    /// real part is the source's internal resistance.
    pub impedance: Option<Spanned<toml::Value>>,
    /// Lumped port: where its impedance, S11 and powers are reported.
    pub frequencies: Option<Spanned<FrequencySpec>>,
}

/// A lumped RLC element across a `[[geometry]]` box: `element = { resistance = 50.0,
/// direction = "z" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElementSpec {
    /// Resistance (ohm; 0 or absent: none).
    pub resistance: Option<Spanned<f64>>,
    /// Inductance (H; 0 or absent: none).
    pub inductance: Option<Spanned<f64>>,
    /// Capacitance (F; 0 or absent: none).
    pub capacitance: Option<Spanned<f64>>,
    /// The axis its current flows along: x, y or z.
    pub direction: Spanned<String>,
    /// series (default) or parallel.
    pub topology: Option<Spanned<String>>,
    /// Its name, its group under `/elements/` (default `element<i>`, i its geometry index).
    pub name: Option<Spanned<String>>,
    /// Where its impedance and dissipated power are reported (default: the first lumped
    /// port's frequencies; with neither, no spectra).
    pub frequencies: Option<Spanned<FrequencySpec>>,
}

/// A source's time dependence.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaveformSpec {
    /// gaussian | ricker | continuous.
    #[serde(rename = "type")]
    pub kind: Spanned<String>,
    /// Centre (gaussian), peak (ricker) or carrier (continuous) frequency in Hz.
    pub frequency: Spanned<f64>,
    /// Gaussian: full width at half maximum of the spectrum, in Hz (default: frequency / 2).
    pub bandwidth: Option<Spanned<f64>>,
    /// Continuous: turn-on time in seconds (default: three periods).
    pub ramp: Option<Spanned<f64>>,
    /// Extra delay in seconds before the pulse (default 0).
    pub delay: Option<Spanned<f64>>,
}

/// One `[[monitor]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitorSpec {
    /// probe | snapshot | flux | far_field.
    #[serde(rename = "type")]
    pub kind: Spanned<String>,
    /// Unique name; the HDF5 group name.
    pub name: Spanned<String>,
    /// Probe position.
    pub position: Option<Spanned<Vec<f64>>>,
    /// Probe: interpolate between grid values (default true) or take the nearest one.
    pub interpolate: Option<Spanned<bool>>,
    /// Field components recorded (probes and snapshots).
    pub components: Option<Spanned<Vec<Spanned<String>>>>,
    /// Snapshot plane: a table with exactly one of x, y, z.
    pub plane: Option<Spanned<BTreeMap<String, f64>>>,
    /// Snapshot box, closed flux box or far-field box: `{ center = [...], size = [...] }`.
    #[serde(rename = "box")]
    pub region: Option<Spanned<BoxSpec>>,
    /// Snapshot period in steps.
    pub every: Option<Spanned<i64>>,
    /// Snapshot: keep every n-th cell along each axis (default 1).
    pub stride: Option<Spanned<i64>>,
    /// Flux and far field: the frequencies of the spectrum.
    pub frequencies: Option<Spanned<FrequencySpec>>,
    /// Flux: also store the DFT fields on the plane or the box's faces (default false).
    pub fields: Option<Spanned<bool>>,
    /// Flux and far field: sample the running DFTs every `decimation` steps (default: the
    /// largest period the sources' band and the highest frequency allow; 1: every step).
    pub decimation: Option<Spanned<i64>>,
    /// Mode monitor: decompose onto the plane's first `modes` modes (default 1).
    pub modes: Option<Spanned<i64>>,
    /// Mode monitor: a straight path across the plane, `{ from = [x, y, z], to = [x, y, z] }`,
    /// along which each mode's voltage is integrated (its characteristic impedance V^2 / P).
    pub voltage: Option<Spanned<VoltageSpec>>,
    /// Far field: polar angles in degrees from +z, `{ min, max, count }` within [0, 180].
    pub theta: Option<Spanned<AngleSpec>>,
    /// Far field: azimuths in degrees from +x towards +y, `{ min, max, count }`.
    pub phi: Option<Spanned<AngleSpec>>,
    /// Probe in a `[scan]`: `[dx, dy, dz]`, how far the probe moves from one trace to the next
    /// (gprMax's `#rx_steps`).
    pub scan_step: Option<Spanned<Vec<f64>>>,
}

/// `[scan]`: a B-scan, the run repeated for `traces` positions of the sources and probes that
/// have a `scan_step`. The reader checks only that the table is there; its keys are read and
/// checked by the resolver (`resolve::scan`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanSection {
    /// Number of traces (>= 1); trace k has every moving source and probe at its position
    /// plus k times its `scan_step`.
    pub traces: Spanned<i64>,
}

/// `[sparameters]`: the ports of an S-matrix, one run per port; read and checked by the
/// resolver (`resolve::sparameters`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SParametersSection {
    /// The port names: each a mode source and a mode monitor of that name.
    pub ports: Spanned<Vec<Spanned<String>>>,
    /// The Touchstone file's reference impedance (ohm, default 50).
    pub reference_impedance: Option<Spanned<f64>>,
}

/// Evenly spaced angles `{ min = ..., max = ..., count = ... }` in degrees.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AngleSpec {
    /// First angle (degrees).
    pub min: f64,
    /// Last angle (degrees).
    pub max: f64,
    /// Number of angles (>= 1).
    pub count: i64,
}

/// A voltage path across a mode monitor's plane: from one conductor to another, along one of
/// the plane's axes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoltageSpec {
    /// The start `[x, y, z]` (on the conductor the voltage is measured from).
    pub from: Vec<f64>,
    /// The end `[x, y, z]`.
    pub to: Vec<f64>,
}

/// Evenly spaced frequencies `{ min = ..., max = ..., count = ... }` in Hz.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrequencySpec {
    /// Lowest frequency (Hz).
    pub min: f64,
    /// Highest frequency (Hz).
    pub max: f64,
    /// Number of frequencies (>= 1).
    pub count: i64,
}

/// An axis-aligned box region.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxSpec {
    /// Centre.
    pub center: Vec<f64>,
    /// Edge lengths.
    pub size: Vec<f64>,
}

/// One `[[refine]]` entry: cells of at most `cell_size` inside `box`, along each axis.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefineSpec {
    /// The refined region `{ center = [...], size = [...] }`.
    #[serde(rename = "box")]
    pub region: Spanned<BoxSpec>,
    /// The largest cell inside: one number or `[dx, dy, dz]`, at most the background cell
    /// (`simulation.cell_size`).
    pub cell_size: Spanned<toml::Value>,
}

/// The `[[refine]]` entries of a scene text, read on their own from the whole file (every
/// other key is ignored here: the reader checks those).
#[derive(Debug, Deserialize, Default)]
pub struct RefineEntries {
    /// The entries in file order.
    #[serde(default)]
    pub refine: Vec<Spanned<RefineSpec>>,
}
