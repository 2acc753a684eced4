//! The `yee` command line: parse arguments, call the library, map errors to exit codes
//! (0 success, 1 runtime failure, 2 invalid input, 128 + signal when stopped by a signal:
//! 130 SIGINT, 143 SIGTERM, 129 SIGHUP).

pub mod progress;
pub mod signals;

use crate::run::{BackendChoice, EngineChoice, Refusal, RunError, RunOptions};
use crate::scene::SceneError;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "yee",
    version,
    about = "FDTD electromagnetic simulation: scene files in, HDF5 out"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scene and write its results to HDF5.
    Run(RunArgs),
    /// Continue a run stopped after a checkpoint (SIGTERM, or --checkpoint-every), appending to
    /// its result file, or a stopped scan at its first unfinished trace: the finished file
    /// equals an uninterrupted run's. Backend, slabs, threads and GPUs may differ from the
    /// first run's.
    Resume(ResumeArgs),
    /// The CUDA driver, NVRTC and GPUs this machine has, or why CUDA cannot be used.
    Devices,
    /// Update throughput on a vacuum cube with a 10-cell CPML (or PEC walls), fused and
    /// two-pass side by side: Mcells/s and the fractions of the two-pass and fused rooflines
    /// at the memory bandwidth measured in the same run.
    Bench(BenchArgs),
    /// Check a scene without running it: print the grid and any warnings.
    Check {
        /// The scene file (TOML).
        scene: PathBuf,
    },
    /// Dry run: the memory a scene needs, where it fits, the slab split and a time estimate.
    Plan(PlanArgs),
    /// Waveguide modes without running FDTD: of every mode source and mode monitor plane of
    /// the scene, or of the plane `--plane` names: n_eff (as the 3-D grid propagates it),
    /// group index and how the transverse E divides between the plane's two axes.
    Modes(ModesArgs),
    /// The material library: every fit a scene can name with `{ library = "..." }`, with its
    /// band, poles and source.
    Materials,
    /// Project the far-field monitors of a result file again at other angles, from the surface
    /// DFTs the run stored (replaces theta, phi, E_theta, E_phi and intensity in the file).
    Farfield {
        /// The result file (HDF5) of a run with a `type = "far_field"` monitor.
        file: PathBuf,
        /// Polar angles in degrees from +z: MIN:MAX:COUNT within [0, 180], e.g. 0:180:37.
        #[arg(long, value_name = "MIN:MAX:COUNT", default_value = "0:180:37", value_parser = parse_theta)]
        theta: Angles,
        /// Azimuths in degrees from +x towards +y: MIN:MAX:COUNT, e.g. 0:360:73.
        #[arg(long, value_name = "MIN:MAX:COUNT", default_value = "0:360:73", value_parser = parse_phi)]
        phi: Angles,
    },
}

/// `yee modes`: the plane, the frequency and how many modes.
#[derive(Args)]
struct ModesArgs {
    /// The scene file (TOML).
    scene: PathBuf,
    /// A plane instead of the scene's mode sources and monitors: AXIS=COORDINATE in the
    /// scene's length unit, e.g. x=-3.0 (the whole node plane nearest it); needs --frequency.
    #[arg(long, value_name = "AXIS=COORDINATE")]
    plane: Option<String>,
    /// The frequency in Hz (default: a mode source's centre frequency, a mode monitor's
    /// middle frequency).
    #[arg(long)]
    frequency: Option<f64>,
    /// How many modes, highest n_eff first (at least as many as a source's mode index needs
    /// and a monitor decomposes onto).
    #[arg(long, default_value_t = 2)]
    modes: usize,
    /// Look for the modes whose n_eff is nearest this instead of the most guided (a leaky
    /// mode, or a guide's modes over a substrate of higher index).
    #[arg(long)]
    neff: Option<f64>,
    /// Turn the plane's cells in the domain's PML layers into an in-plane PML, so that a
    /// leaky mode radiates out of the plane: its loss is then its leakage.
    #[arg(long)]
    pml: bool,
    /// Write the modes (n_eff, group index, E profiles) to this HDF5 file as
    /// /modes/<name>/ per plane (`plane` for --plane), replacing the file.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

/// The engine options of `yee run` and `yee resume`.
#[derive(Args)]
struct EngineArgs {
    /// Engine: auto picks CUDA when the grid fits on the GPUs, else the CPU.
    #[arg(long, default_value = "auto", value_parser = backend_arg())]
    backend: BackendChoice,
    /// Number of slabs the grid is split into along x (default: one per thread).
    #[arg(long)]
    slabs: Option<usize>,
    /// Worker threads for the CPU backend (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// CUDA: the GPUs to use, by driver ordinal (e.g. 0,2; default: as the plan decides).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    gpus: Option<Vec<usize>>,
    /// CUDA: slabs on each GPU (default 1; several test the multi-GPU path on one GPU).
    /// The same bits: hidden from --help (docs/cli.md, options for tuning and testing).
    #[arg(long, value_name = "N", hide = true)]
    slabs_per_gpu: Option<usize>,
    /// No progress output, only errors.
    #[arg(short, long)]
    quiet: bool,
}

impl EngineArgs {
    /// The options as the library takes them.
    fn choice(&self) -> EngineChoice {
        EngineChoice {
            backend: self.backend,
            slabs: self.slabs,
            threads: self.threads,
            gpus: self.gpus.clone(),
            slabs_per_gpu: self.slabs_per_gpu,
        }
    }
}

/// `yee run`'s arguments.
#[derive(Args)]
struct RunArgs {
    /// The scene file (TOML).
    scene: PathBuf,
    /// Output file (default: <simulation.name>.h5 in the current directory).
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    engine: EngineArgs,
    /// Replace the output file and its .xmf sidecar if they exist (without this, yee
    /// refuses rather than overwrite earlier results).
    #[arg(long)]
    overwrite: bool,
    /// Write the whole state to <output stem>.checkpoint.h5 this often (wall time: 90s,
    /// 30m, 2h), and when stopped; `yee resume` continues from it. SIGTERM always writes one.
    #[arg(long, value_name = "TIME", value_parser = parse_every)]
    checkpoint_every: Option<std::time::Duration>,
    /// Step with the two-pass reference update (H over the grid, then E, each pass timed)
    /// instead of the fused H+E sweep; the fields are the same bits (hidden from --help).
    #[arg(long, hide = true)]
    two_pass: bool,
    /// CPU: steps the fused sweep takes at once between the steps monitors read (temporal
    /// blocking; 1 for one step per sweep); the fields are the same bits (hidden from
    /// --help).
    #[arg(long, value_name = "N", hide = true, default_value_t = crate::run::DEFAULT_STEPS_PER_SWEEP as u32, value_parser = clap::value_parser!(u32).range(1..=64))]
    steps_per_sweep: u32,
}

/// `yee resume`'s arguments.
#[derive(Args)]
struct ResumeArgs {
    /// The result file of the stopped run (its checkpoint is <stem>.checkpoint.h5 beside it).
    output: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
    /// Go on writing checkpoints this often (90s, 30m, 2h), as `yee run --checkpoint-every`.
    #[arg(long, value_name = "TIME", value_parser = parse_every)]
    checkpoint_every: Option<std::time::Duration>,
}

/// `yee bench`'s arguments.
#[derive(Args)]
struct BenchArgs {
    /// Engine (auto: CUDA when usable, else the CPU).
    #[arg(long, default_value = "auto", value_parser = backend_arg())]
    backend: BackendChoice,
    /// Cells along each edge of the cube (default: 512 on CUDA, 128 on the CPU).
    #[arg(long)]
    size: Option<usize>,
    /// Field precision.
    #[arg(long, value_enum, default_value_t = PrecisionArg::F32)]
    precision: PrecisionArg,
    /// Timed steps (default: 100 on CUDA, 20 on the CPU).
    #[arg(long)]
    steps: Option<usize>,
    /// CPU worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// CPU slabs (default: one per thread).
    #[arg(long)]
    slabs: Option<usize>,
    /// CUDA: the GPUs to use, by driver ordinal (default: 0).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    gpus: Option<Vec<usize>>,
    /// CUDA: slabs on each GPU.
    #[arg(long, value_name = "N", default_value_t = 1)]
    slabs_per_gpu: usize,
    /// Fill half the cube with a two-pole Drude-Lorentz metal (the dispersive pass).
    #[arg(long)]
    metal: bool,
    /// PEC walls instead of the 10-cell CPML.
    #[arg(long)]
    pec: bool,
    /// Time the fused H+E sweep only (default: fused and two-pass side by side).
    #[arg(long, conflicts_with = "two_pass")]
    fused: bool,
    /// Time the two-pass update only.
    #[arg(long)]
    two_pass: bool,
    /// CPU: steps the fused mode sweeps at once (temporal blocking, as `yee run`; 1 for one
    /// step per sweep).
    #[arg(long, value_name = "N", default_value_t = crate::run::DEFAULT_STEPS_PER_SWEEP as u32, value_parser = clap::value_parser!(u32).range(1..=64))]
    steps_per_sweep: u32,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
}

/// `yee plan`'s arguments.
#[derive(Args)]
struct PlanArgs {
    /// The scene file (TOML).
    scene: PathBuf,
    /// Print one JSON object (schema in docs/plan.md) instead of the report.
    #[arg(long)]
    json: bool,
    /// GPUs to plan for instead of those present: COUNTxSIZE or COUNTxMODEL, comma-separated
    /// (4x80GiB, 2xH100, 8xH200, 1xH100,1xA100-40GB).
    #[arg(long, value_name = "SPEC", value_parser = parse_gpus_arg)]
    gpus: Option<GpuSpec>,
    /// Host memory to plan for instead of this machine's available memory (256GiB, 512GB).
    #[arg(long, value_name = "SIZE", value_parser = crate::plan::parse_size)]
    host_memory: Option<u64>,
    /// Engine: auto picks CUDA when the grid fits on the GPUs, else the CPU.
    #[arg(long, default_value = "auto", value_parser = backend_arg())]
    backend: BackendChoice,
    /// Price of one GPU for one hour, for a cost estimate.
    #[arg(long, value_name = "PER_GPU_HOUR", value_parser = parse_price)]
    price: Option<f64>,
    /// Slabs on each GPU, as `yee run --slabs-per-gpu` (default 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    slabs_per_gpu: Option<u64>,
    /// Plan one domain over R MPI ranks, one per node like this one (or --host-memory):
    /// each rank's slabs and bytes, and the halo traffic over the network.
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u64).range(1..))]
    ranks: Option<u64>,
    /// The interconnect between ranks, for the halo time (200Gbit/s, 25GB/s; default
    /// 100Gbit/s).
    #[arg(long, value_name = "BANDWIDTH", value_parser = crate::plan::ranks::parse_network, requires = "ranks")]
    network: Option<f64>,
    /// Worker threads of each rank, as `yee run --threads` (default: all cores).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    threads: Option<u64>,
    /// Slabs in all, as `yee run --slabs` (default: one per thread).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    slabs: Option<u64>,
}

/// The parser of `--backend`: its names listed in `--help`.
fn backend_arg() -> impl clap::builder::TypedValueParser<Value = BackendChoice> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(BackendChoice::NAMES)
        .map(|s| s.parse::<BackendChoice>().expect("one of the listed names"))
}

/// Evenly spaced angles from `--theta` or `--phi`.
#[derive(Clone)]
struct Angles(Vec<f64>);

fn parse_angles(s: &str, range: Option<(f64, f64)>) -> Result<Angles, String> {
    let parts: Vec<&str> = s.split(':').collect();
    let bad = || {
        format!(
            "`{s}` is not MIN:MAX:COUNT (degrees, min <= max{}, 1 <= count <= 10000), e.g. 0:180:37",
            range.map_or(String::new(), |(lo, hi)| format!(", within [{lo}, {hi}]"))
        )
    };
    let [lo, hi, n] = parts[..] else {
        return Err(bad());
    };
    let (Ok(lo), Ok(hi), Ok(n)) = (
        lo.trim().parse::<f64>(),
        hi.trim().parse::<f64>(),
        n.trim().parse::<usize>(),
    ) else {
        return Err(bad());
    };
    let within = range.is_none_or(|(a, b)| lo >= a && hi <= b);
    if !(lo.is_finite() && hi.is_finite() && lo <= hi && within) || n == 0 || n > 10_000 {
        return Err(bad());
    }
    Ok(Angles(
        (0..n)
            .map(|i| {
                if n == 1 {
                    lo
                } else {
                    lo + (hi - lo) * i as f64 / (n - 1) as f64
                }
            })
            .collect(),
    ))
}

fn parse_theta(s: &str) -> Result<Angles, String> {
    parse_angles(s, Some((0.0, 180.0)))
}

fn parse_phi(s: &str) -> Result<Angles, String> {
    parse_angles(s, None)
}

/// `yee farfield`: re-project every far-field monitor of `file`.
fn farfield(file: PathBuf, theta: Angles, phi: Angles) -> ExitCode {
    match crate::output::far_field::reproject(&file, &theta.0, &phi.0) {
        Ok(done) => {
            for r in done {
                print!(
                    "{}: {} x {} angles projected in {:.3} s",
                    r.name,
                    theta.0.len(),
                    phi.0.len(),
                    r.seconds
                );
                if !r.power.is_empty() {
                    let worst = r.power.iter().zip(&r.flux_power).map(|(p, f)| p / f).fold(
                        1.0f64,
                        |w, x| {
                            if (x - 1.0).abs() > (w - 1.0).abs() {
                                x
                            } else {
                                w
                            }
                        },
                    );
                    print!("; sphere integral / box flux, farthest from 1: {worst:.5}");
                }
                println!();
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(if e.input { 2 } else { 1 })
        }
    }
}

/// GPUs given with `--gpus`.
#[derive(Clone)]
struct GpuSpec(Vec<crate::plan::Device>);

fn parse_gpus_arg(s: &str) -> Result<GpuSpec, crate::plan::SpecError> {
    crate::plan::parse_gpus(s).map(GpuSpec)
}

/// `--checkpoint-every`: a positive number of seconds, minutes or hours (`90s`, `30m`,
/// `1.5h`).
fn parse_every(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let bad = || {
        format!("`{s}` is not a time: give a positive number with a unit s, m or h, e.g. 90s, 30m or 2h")
    };
    let unit = t.chars().last().ok_or_else(bad)?;
    let scale = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        _ => return Err(bad()),
    };
    let n: f64 = t[..t.len() - 1].trim().parse().map_err(|_| bad())?;
    let secs = n * scale;
    if !(secs.is_finite() && secs > 0.0 && secs < 1e9) {
        return Err(bad());
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

fn parse_price(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
        _ => Err(format!(
            "`{s}` is not a price: give a non-negative number per GPU-hour, e.g. 2.5"
        )),
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum PrecisionArg {
    F32,
    F64,
}

/// A command's exit status (0 success, 1 runtime failure, 2 invalid input, 128 + signal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitCode(pub u8);

impl ExitCode {
    /// The command did what was asked.
    pub const SUCCESS: ExitCode = ExitCode(0);
    /// The command failed while running.
    pub const FAILURE: ExitCode = ExitCode(1);
}

impl From<u8> for ExitCode {
    fn from(code: u8) -> Self {
        ExitCode(code)
    }
}

/// Run the `yee` command with `args` (the program's name first, as `std::env::args_os` gives
/// them): the binary's `main` and the Python wheel's `yee` command both call this. A bad
/// argument or `--help` prints clap's text and exits the process, as a command line does.
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = Cli::parse_from(args);
    // Under mpirun (with the `mpi` feature) MPI runs until this is dropped, after the command.
    let _mpi = crate::ranks::init();
    if let (Some(why), Command::Run { .. } | Command::Resume { .. }) =
        (crate::ranks::unsupported_launch(), &cli.command)
    {
        eprintln!("error: {why}");
        return ExitCode::from(2);
    }
    match cli.command {
        Command::Run(args) => run(args),
        Command::Resume(args) => resume(args),
        Command::Devices => devices(),
        Command::Bench(args) => bench(args),
        Command::Check { scene } => check(scene),
        Command::Farfield { file, theta, phi } => farfield(file, theta, phi),
        Command::Materials => materials(),
        Command::Modes(args) => modes(args),
        Command::Plan(args) => plan(args),
    }
}

/// `yee plan`: the plan of a scene (and over ranks), as a report or JSON.
fn plan(args: PlanArgs) -> ExitCode {
    let PlanArgs {
        scene,
        json,
        gpus,
        host_memory,
        backend,
        price,
        slabs_per_gpu,
        ranks,
        network,
        threads,
        slabs,
    } = args;
    let model = match load(&scene) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let options = crate::plan::PlanOptions {
        backend,
        price_per_gpu_hour: price,
        slabs_per_gpu: slabs_per_gpu.map(|n| n as usize),
        threads: threads.map(|n| n as usize),
        slabs: slabs.map(|n| n as usize),
        ..Default::default()
    };
    let ranks = ranks.map(|r| (r as usize, network));
    let report = plan_report(&model, gpus.map(|g| g.0), host_memory, &options, ranks);
    if json {
        println!("{}", report.json);
    } else {
        print!("{}", report.text);
    }
    ExitCode::SUCCESS
}

/// A scene's plan as `yee plan` reports it: the JSON object (the plan's fields, the checkpoint's
/// size and write time, and the plan over ranks when asked) and the text report.
#[derive(Debug, Clone)]
pub struct PlanReport {
    /// The plan as one JSON object.
    pub json: serde_json::Value,
    /// The report `yee plan` prints.
    pub text: String,
}

/// The plan of `model` on `gpus` (None: the GPUs found here) and `host_memory` bytes (None:
/// this machine's, its bandwidth measured), over `ranks` (count, network bytes/s) when given.
pub fn plan_report(
    model: &crate::model::Model,
    gpus: Option<Vec<crate::plan::Device>>,
    host_memory: Option<u64>,
    options: &crate::plan::PlanOptions,
    ranks: Option<(usize, Option<f64>)>,
) -> PlanReport {
    let mut hardware = crate::plan::Hardware::detect(gpus, host_memory);
    if host_memory.is_none() {
        // Planning for this machine: measure its memory bandwidth rather than assume it.
        hardware.measure_host_bandwidth();
    }
    let p =
        crate::plan::plan(model, &hardware, options).with_painting_time(model, &hardware, options);
    let over_ranks = ranks
        .map(|(r, network)| crate::plan::ranks::plan_ranks(model, &hardware, options, r, network));
    let checkpoint = crate::checkpoint::estimate_bytes(model);
    let write_rate = crate::checkpoint::ASSUMED_WRITE_BYTES_PER_S;
    // The plan's object plus the checkpoint's size and write time.
    let mut json: serde_json::Value =
        serde_json::from_str(&p.to_json()).expect("the plan serialises to a JSON object");
    if let Some(o) = json.as_object_mut() {
        o.insert("checkpoint_bytes".into(), checkpoint.into());
        o.insert(
            "checkpoint_write_s".into(),
            (checkpoint as f64 / write_rate).into(),
        );
        if let Some(r) = &over_ranks {
            o.insert(
                "ranks".into(),
                serde_json::to_value(r).expect("the rank plan serialises"),
            );
        }
    }
    let mut text = p.render();
    text.push_str(&crate::checkpoint::plan_line(model));
    if let Some(r) = &over_ranks {
        text.push_str(&r.render());
    }
    PlanReport { json, text }
}

/// Load a scene, printing warnings; on failure print the problems and return exit code 2.
fn load(scene: &std::path::Path) -> Result<crate::model::Model, ExitCode> {
    load_model(scene).map_err(say)
}

/// The model of `scene` (warnings printed, by rank 0 alone over MPI ranks: every rank reads
/// the same scene), or why not.
fn load_model(scene: &std::path::Path) -> Result<crate::model::Model, Refusal> {
    match crate::scene::load(scene) {
        Ok((model, warnings)) => {
            if crate::ranks::world().is_root() {
                for w in warnings {
                    eprintln!("warning: {w}");
                }
            }
            Ok(model)
        }
        Err(e @ SceneError::Io { .. }) | Err(e @ SceneError::Invalid { .. }) => {
            Err(Refusal::input(e.to_string()))
        }
    }
}

/// Print a refusal and give its exit code.
fn say(refusal: Refusal) -> ExitCode {
    eprintln!("error: {}", refusal.message);
    ExitCode::from(refusal.code)
}

/// [`crate::ranks::agree_to_start`], its refusal printed.
fn agree_to_start<T>(prepared: Result<T, Refusal>) -> Result<T, ExitCode> {
    let prepared = prepared.map_err(|r| (r.message, r.code));
    crate::ranks::agree_to_start(prepared).map_err(|(code, lines)| {
        for line in lines {
            eprintln!("error: {line}");
        }
        ExitCode::from(code)
    })
}

/// `yee materials`: the library's table.
fn materials() -> ExitCode {
    print!("{}", crate::model::library::table());
    ExitCode::SUCCESS
}

fn check(scene: PathBuf) -> ExitCode {
    match load(&scene) {
        Ok(m) => {
            for line in check_lines(&scene.display().to_string(), &m) {
                println!("{line}");
            }
            mode_source_lines(&m)
        }
        Err(code) => code,
    }
}

/// What `yee check` says of a valid scene before its mode sources: the grid (`label` naming
/// the scene), the scan, each material at the sources' frequencies, what each object paints
/// and the conformal surfaces (indented lines after the first).
pub fn check_lines(label: &str, m: &crate::model::Model) -> Vec<String> {
    let g = &m.grid;
    let mut lines = vec![format!(
        "{}: {} x {} x {} = {} cells, {} step{} of {:.4e} s, {}",
        label,
        g.shape[0],
        g.shape[1],
        g.shape[2],
        g.cells(),
        g.steps,
        if g.steps == 1 { "" } else { "s" },
        g.dt,
        m.precision.name()
    )];
    if let Some(scan) = &m.scan {
        lines.push(format!(
            "  scan: {} traces of that grid, in one run",
            scan.traces
        ));
    }
    let more = crate::scene::material_lines(m)
        .into_iter()
        .chain(crate::scene::object_lines(m))
        .chain(m.conformal_summary().map(|c| c.line()))
        .chain(ports_line(m))
        .chain(bloch_line(m));
    lines.extend(more.map(|line| format!("  {line}")));
    lines
}

/// The surface ports of a metal's curved surfaces ([`crate::model::SurfacePorts`]), e.g.
/// `surface ports: 14,208 surface edges of curved metal surfaces ...`; None without any.
fn ports_line(m: &crate::model::Model) -> Option<String> {
    let ports = m.surface_ports();
    if ports.is_empty() {
        return None;
    }
    Some(format!(
        "surface ports: {} edges on metal surfaces off the grid planes, {} with their rings, {} ports (the averaged tensor at the true surface; on the CPU or the GPUs, over MPI ranks too; `conformal = false` on the metal staircases it)",
        ports.surface_edges,
        ports.edges.len(),
        ports.ports.len()
    ))
}

/// The Bloch phases of a Bloch cell (those an oblique wave set included), e.g. `Bloch cell:
/// phase 0.2875 along y (k = 1.806e6 rad/m); two field sets`; None without one.
fn bloch_line(m: &crate::model::Model) -> Option<String> {
    let b = &m.boundaries;
    if !b.has_bloch() {
        return None;
    }
    let size = m.grid.size();
    let axes: Vec<String> = (0..3)
        .filter(|&a| b.bloch_phase(a).is_some())
        .map(|a| {
            let k = 2.0 * std::f64::consts::PI * b.bloch[a] / size[a];
            format!(
                "phase {:.6} along {} (k = {k:.4e} rad/m)",
                b.bloch[a],
                crate::model::Axis::ALL[a].name()
            )
        })
        .collect();
    Some(format!(
        "Bloch cell: {}; two field sets (the real and imaginary parts)",
        axes.join(", ")
    ))
}

/// `yee check`'s lines for the mode sources: each one's mode and how purely its one profile
/// launches it at the band's edges (three solves of each plane); exit 2 when a
/// source's mode cannot be launched.
fn mode_source_lines(model: &crate::model::Model) -> ExitCode {
    let mut seen: Vec<&str> = Vec::new();
    for s in &model.sources {
        let Some((sheet, _)) = &s.mode else { continue };
        if seen.contains(&sheet.name.as_str()) {
            continue;
        }
        seen.push(&sheet.name);
        let nodes = model
            .sources
            .iter()
            .filter(|s| {
                s.mode
                    .as_ref()
                    .is_some_and(|(m, role)| m.name == sheet.name && *role == 0)
            })
            .count();
        if nodes > 1 {
            println!(
                "  mode source `{}`: its profile is solved at {nodes} frequencies across its band and interpolated (exact at each)",
                sheet.name
            );
            continue;
        }
        match crate::modes::purity(model, sheet) {
            Ok(p) => println!("  {}", p.line(&sheet.name)),
            Err(e) => {
                eprintln!("error: {}: {e}", sheet.place);
                return ExitCode::from(2);
            }
        }
    }
    ExitCode::SUCCESS
}

/// One plane `yee modes` solves: its name, where it lies, at which frequency, how many modes.
struct ModeJob {
    name: String,
    plane: crate::modes::Plane,
    frequency: f64,
    count: usize,
}

/// The planes `yee modes` solves: the one `--plane` names, or every mode source's and mode
/// monitor's.
fn mode_jobs(args: &ModesArgs, model: &crate::model::Model) -> Result<Vec<ModeJob>, String> {
    if args.frequency.is_some_and(|f| !(f.is_finite() && f > 0.0)) || args.modes == 0 {
        return Err("--frequency must be a positive number of Hz and --modes at least 1".into());
    }
    if let Some(plane) = &args.plane {
        let Some((axis, at)) = plane.split_once('=') else {
            return Err(format!(
                "--plane {plane}: write AXIS=COORDINATE, e.g. x=-3.0"
            ));
        };
        let Some(axis) = ["x", "y", "z"].iter().position(|a| *a == axis.trim()) else {
            return Err(format!("--plane {plane}: the axis is x, y or z"));
        };
        let Ok(at) = at.trim().parse::<f64>() else {
            return Err(format!("--plane {plane}: the coordinate is a number"));
        };
        let Some(frequency) = args.frequency else {
            return Err("--plane needs --frequency (Hz)".into());
        };
        let unit = crate::model::length_unit_metres(&model.length_unit).unwrap_or(1.0);
        let plane =
            crate::modes::Plane::nearest(model, axis, at * unit).map_err(|e| e.to_string())?;
        return Ok(vec![ModeJob {
            name: "plane".into(),
            plane,
            frequency,
            count: args.modes,
        }]);
    }
    let mut jobs: Vec<ModeJob> = Vec::new();
    for s in &model.sources {
        let Some((sheet, _)) = &s.mode else { continue };
        if jobs.iter().any(|j| j.name == sheet.name) {
            continue;
        }
        let needs = match sheet.choice {
            crate::model::ModeChoice::Index(i) => i + 1,
            crate::model::ModeChoice::Neff(_) => 1,
        };
        jobs.push(ModeJob {
            name: sheet.name.clone(),
            plane: sheet.plane,
            frequency: args.frequency.unwrap_or(sheet.centre),
            count: args.modes.max(needs),
        });
    }
    for f in &model.fluxes {
        let Some(m) = &f.mode else { continue };
        jobs.push(ModeJob {
            name: f.name.clone(),
            plane: crate::modes::Plane::of_patch(&f.patches[0]),
            frequency: args
                .frequency
                .unwrap_or(f.frequencies[f.frequencies.len() / 2]),
            count: args.modes.max(m.count),
        });
    }
    if jobs.is_empty() {
        return Err(
            "the scene has no mode source or mode monitor: give a plane with --plane AXIS=COORDINATE and --frequency".into(),
        );
    }
    Ok(jobs)
}

/// `yee modes`: solve the planes of the scene (or the one the command line names) and print
/// their modes.
fn modes(args: ModesArgs) -> ExitCode {
    if let Some(n) = args.neff.filter(|n| !(n.is_finite() && *n > 0.0)) {
        eprintln!("error: --neff {n}: the effective index to look near is a positive number");
        return ExitCode::from(2);
    }
    let model = match load(&args.scene) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let jobs = match mode_jobs(&args, &model) {
        Ok(j) => j,
        Err(why) => {
            eprintln!("error: {why}");
            return ExitCode::from(2);
        }
    };
    let file = match &args.output {
        Some(out) => match hdf5::File::create(out) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("error: could not write {}: {e}", out.display());
                return ExitCode::from(1);
            }
        },
        None => None,
    };
    let names = ["x", "y", "z"];
    let unit = crate::model::length_unit_metres(&model.length_unit).unwrap_or(1.0);
    let mut failed = false;
    for job in &jobs {
        let plane = job.plane;
        let [u, v] = plane.in_plane();
        let place = format!(
            "{:.6}",
            model.grid.coordinate(plane.axis, plane.index as f64) / unit
        );
        println!(
            "{}: `{}`: plane {} = {place} {} at {:.6e} Hz",
            args.scene.display(),
            job.name,
            names[plane.axis],
            model.length_unit,
            job.frequency
        );
        let search = crate::modes::Search {
            neff: args.neff,
            pml: args.pml,
        };
        let found = match plane.searched(&model, job.frequency, job.count, search) {
            Ok(found) => found,
            Err(e) => {
                eprintln!("error: `{}`: {e}", job.name);
                failed = true;
                continue;
            }
        };
        for (i, m) in found.modes.iter().enumerate() {
            // A lossy mode's loss, in dB per length unit (and per cm, photonics' unit).
            let loss = if found.loss[i] == 0.0 {
                String::new()
            } else {
                format!(
                    ", loss {:.4e} dB/{} ({:.4e} dB/cm)",
                    found.loss[i] * unit,
                    model.length_unit,
                    found.loss[i] * 0.01
                )
            };
            println!(
                "  mode {i}: n_eff {:.6}{loss}, group index {:.4}, E{} fraction {:.3}, E{} fraction {:.3}, effective area {:.4e} {}^2, wave impedance {:.2} ohm",
                found.neff[i],
                found.group_index[i],
                names[u],
                1.0 - m.v_fraction(),
                names[v],
                m.v_fraction(),
                found.effective_area[i] / (unit * unit),
                model.length_unit,
                found.wave_impedance[i]
            );
        }
        if let (Some(file), Some(out)) = (&file, &args.output) {
            let written =
                crate::output::modes::write_plane_modes(file, &job.name, &model, plane, &found);
            if let Err(e) = written {
                eprintln!("error: could not write {}: {e}", out.display());
                return ExitCode::from(1);
            }
            println!("  written to {} (/modes/{}/)", out.display(), job.name);
        }
    }
    if failed {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// `yee run`: load the scene, check the options, claim the output, and run.
fn run(args: RunArgs) -> ExitCode {
    let RunArgs {
        scene,
        output,
        engine,
        overwrite,
        checkpoint_every,
        two_pass,
        steps_per_sweep,
    } = args;
    let prepared = (|| {
        let model = load_model(&scene)?;
        if let Some(why) = engine.choice().refused() {
            return Err(Refusal::input(why));
        }
        let output = output.unwrap_or_else(|| PathBuf::from(format!("{}.h5", model.name)));
        if output.is_dir() {
            // Before the claim, which refuses folders too: here the example names the scene's
            // file.
            return Err(Refusal::input(format!(
                "`{}` is a folder; -o takes the name of the result file, e.g. -o {}",
                output.display(),
                output.join(format!("{}.h5", model.name)).display()
            )));
        }
        let (opts, claim) = start_run(&model, output, &engine, checkpoint_every, overwrite)?;
        Ok((model, opts, claim))
    })();
    let (model, mut opts, _claim) = match agree_to_start(prepared) {
        Ok(started) => started,
        Err(code) => return code,
    };
    if two_pass {
        opts.step = crate::backend::StepMode::TwoPass;
    }
    opts.steps_per_sweep = steps_per_sweep as usize;
    execute(&model, opts, &engine)
}

/// `yee resume`: rebuild the model from the checkpoint's scene, check the checkpoint, and
/// continue the run into its result file. A scan's result file needs no checkpoint: the model
/// is rebuilt from its `scene` and the remaining traces run into it.
fn resume(args: ResumeArgs) -> ExitCode {
    let ResumeArgs {
        output,
        engine,
        checkpoint_every,
    } = args;
    let prepared = (|| {
        if let Some(why) = engine.choice().refused() {
            return Err(Refusal::input(why));
        }
        let checkpoint = crate::checkpoint::path_for(&output);
        if !output.is_file() {
            return Err(Refusal::input(format!(
                "no result file `{}` to continue: `yee resume` takes the result file of a stopped run",
                output.display()
            )));
        }
        // A scan's result file is its own checkpoint (its finished traces): it needs none
        // beside.
        let (model, resuming) = if let Some(info) = crate::output::scan::ScanFileInfo::read(&output)
        {
            let model = crate::scene::load_str(&info.scene, &output.display().to_string())
                .map_err(|e| {
                    Refusal::input(format!(
                        "the scan's scene in `{}` no longer loads with this yee: {e}",
                        output.display()
                    ))
                })?
                .0;
            if let Some(why) = info.refusal(&model) {
                return Err(Refusal::input(format!(
                    "cannot resume the scan `{}`: {why}",
                    output.display()
                )));
            }
            let line = format!(
                "resuming the scan `{}` at trace {} of {} ({} traces are in it)",
                output.display(),
                info.traces_done,
                info.traces,
                info.traces_done
            );
            (model, line)
        } else {
            let header = crate::checkpoint::read_header(&checkpoint)
                .map_err(|e| Refusal::input(e.to_string()))?;
            let model = crate::scene::load_str(&header.scene, &checkpoint.display().to_string())
                .map_err(|e| {
                    Refusal::input(format!(
                        "the checkpoint's scene no longer loads with this yee: {e}"
                    ))
                })?
                .0;
            header
                .check(&checkpoint, &model)
                .map_err(|e| Refusal::input(e.to_string()))?;
            let line = format!(
                "resuming `{}` from step {} of {} (checkpoint written by the {} backend)",
                output.display(),
                header.step,
                model.grid.steps,
                header.backend
            );
            (model, line)
        };
        // The result exists: take the lock without the overwrite check.
        let (opts, claim) = start_run(&model, output, &engine, checkpoint_every, true)?;
        Ok((model, resuming, opts, claim))
    })();
    let (model, resuming, mut opts, _claim) = match agree_to_start(prepared) {
        Ok(started) => started,
        Err(code) => return code,
    };
    opts.resume = true;
    if !engine.quiet && crate::ranks::world().is_root() {
        eprintln!("{resuming}");
    }
    execute(&model, opts, &engine)
}

/// Run `model` with `opts` and the engine options, and map the outcome to an exit code.
fn execute(model: &crate::model::Model, mut opts: RunOptions, engine: &EngineArgs) -> ExitCode {
    let quiet = engine.quiet;
    opts.backend = engine.backend;
    opts.slabs = engine.slabs;
    opts.threads = engine.threads;
    opts.gpus = engine.gpus.clone();
    opts.slabs_per_gpu = engine.slabs_per_gpu;
    // SIGTERM (a scheduler taking the machine) always leaves a checkpoint to resume from.
    opts.checkpoint_on_stop = || signals::exit_code() == 143;
    for w in crate::checkpoint::space_warnings(model, &opts.output, opts.checkpoint_every.is_some())
    {
        eprintln!("warning: {w}");
    }
    // Over ranks every rank stops if one was signalled before the run: the others would wait
    // for it in the run's first collective call.
    let stopped = opts.stop.load(std::sync::atomic::Ordering::SeqCst);
    if !crate::ranks::all_ranks(!stopped) {
        if crate::ranks::world().is_root() {
            eprintln!("interrupted before the run started; nothing was written");
        }
        return ExitCode::from(signals::exit_code());
    }
    let mut observer = progress::TerminalObserver::new(quiet);
    let result = crate::run::run(model, &opts, &mut observer);
    let summary = match &result {
        Ok(s) => Some(s),
        Err(RunError::Interrupted(s))
        | Err(RunError::NonFinite { summary: s, .. })
        | Err(RunError::Device { summary: s, .. })
        | Err(RunError::Output {
            summary: Some(s), ..
        }) => Some(&**s),
        Err(_) => None,
    };
    if let Some(w) = summary.and_then(|s| s.sidecar_warning.as_ref()) {
        eprintln!("warning: {w}");
    }
    match result {
        Ok(_) => ExitCode::SUCCESS,
        // A scan counts its traces: the file keeps the leading finished ones.
        Err(RunError::Interrupted(s)) if model.scan.is_some() => {
            let done = s.steps_done / model.grid.steps.max(1);
            let traces = s.steps / model.grid.steps.max(1);
            // The file is the scan's checkpoint: however it was stopped, it resumes.
            eprintln!(
                "interrupted after {done} of {traces} traces; the finished traces are in `{}` (traces_done = {done}, complete = false); resume with yee resume {}",
                s.output.display(),
                s.output.display()
            );
            ExitCode::from(signals::exit_code())
        }
        Err(e @ RunError::Interrupted(_)) => {
            eprintln!("{e}");
            ExitCode::from(signals::exit_code())
        }
        Err(e @ RunError::Resume(_))
        | Err(e @ RunError::Backend(crate::run::StartError::Modes(_))) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(RunError::OtherRank(code)) => ExitCode::from(code),
        // A refusal over ranks is agreed by every rank: rank 0 says it for all.
        Err(RunError::Backend(crate::run::StartError::Refused(_)))
            if !crate::ranks::world().is_root() =>
        {
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// What `yee run` and `yee resume` do before the run: state the options that cannot be
/// honoured as given, install the signal handlers (a stop from here on is orderly), and claim
/// the output, held until the run ends so no other yee run writes this result meanwhile.
fn start_run(
    model: &crate::model::Model,
    output: PathBuf,
    engine: &EngineArgs,
    checkpoint_every: Option<std::time::Duration>,
    overwrite: bool,
) -> Result<(RunOptions, Option<crate::output::claim::OutputClaim>), Refusal> {
    // Over MPI ranks, rank 0 alone speaks and writes the output (the others only hold slabs).
    let world = crate::ranks::world();
    let root = world.is_root();
    if root {
        for note in engine.choice().notes(model) {
            eprintln!("note: {note}");
        }
        let tuned = crate::tuning::tuning().set();
        if !tuned.is_empty() {
            eprintln!(
                "note: tuning from the environment: {} (the same bits; yee devices lists every knob)",
                tuned.join(", ")
            );
        }
    }
    let mut opts = RunOptions::new(output);
    opts.checkpoint_every = checkpoint_every;
    signals::install(&opts.stop);
    // Rank 0 claims the output for every rank (the others learn of a refusal when the ranks
    // agree to start, [`agree_to_start`]).
    if !root {
        return Ok((opts, None));
    }
    match crate::output::claim::OutputClaim::claim(&opts.output, overwrite) {
        Ok(claim) => Ok((opts, Some(claim))),
        Err(e) => Err(Refusal::input(e.to_string())),
    }
}

fn devices() -> ExitCode {
    let (report, _usable) = crate::devices::report();
    let world = crate::ranks::world();
    if world.size == 1 {
        print!("{report}");
        return ExitCode::SUCCESS;
    }
    // Under mpirun: rank 0 prints what every rank sees, rank by rank, with its host.
    let hosts = crate::ranks::hosts();
    let reports = crate::ranks::gather_strings(&report);
    if world.is_root() {
        for (r, (host, text)) in hosts.iter().zip(&reports).enumerate() {
            println!("rank {r} on {host}:");
            for line in text.lines() {
                println!("  {line}");
            }
        }
    }
    ExitCode::SUCCESS
}

/// `yee bench`: check the counts, time the cube, print the result.
fn bench(args: BenchArgs) -> ExitCode {
    use crate::backend::StepMode;
    use crate::bench::{BenchBackend, BenchOptions};
    let BenchArgs {
        backend,
        size,
        precision,
        steps,
        threads,
        slabs,
        gpus,
        slabs_per_gpu,
        metal,
        pec,
        fused,
        two_pass,
        steps_per_sweep,
        json,
    } = args;
    if let Some(why) = crate::bench::refused(size, steps, (threads, slabs, slabs_per_gpu)) {
        eprintln!("error: {why}");
        return ExitCode::from(2);
    }
    let backend = match backend {
        BackendChoice::Cpu => BenchBackend::Cpu,
        BackendChoice::Cuda => BenchBackend::Cuda,
        BackendChoice::Auto => match crate::backend::cuda::probe_gpus() {
            Ok(_) => BenchBackend::Cuda,
            Err(e) => {
                eprintln!("note: benchmarking the CPU: {e}");
                BenchBackend::Cpu
            }
        },
    };
    let gpu = backend == BenchBackend::Cuda;
    if !gpu && (gpus.is_some() || slabs_per_gpu != 1) {
        eprintln!(
            "note: --gpus and --slabs-per-gpu apply to the CUDA benchmark only: ignored on the CPU"
        );
    }
    let opts = BenchOptions {
        backend,
        size: size.unwrap_or(if gpu { 512 } else { 128 }),
        precision: match precision {
            PrecisionArg::F32 => crate::model::Precision::F32,
            PrecisionArg::F64 => crate::model::Precision::F64,
        },
        steps: steps.unwrap_or(if gpu { 100 } else { 20 }),
        threads,
        slabs,
        gpus,
        slabs_per_gpu,
        metal,
        pec,
        modes: match (fused, two_pass) {
            (true, _) => vec![StepMode::Fused],
            (_, true) => vec![StepMode::TwoPass],
            _ => vec![StepMode::Fused, StepMode::TwoPass],
        },
        steps_per_sweep: steps_per_sweep as usize,
    };
    match crate::bench::run(&opts) {
        Ok(r) => {
            if json {
                println!(
                    "{}",
                    serde_json::to_string(&r).expect("a bench result serialises")
                );
            } else {
                print!("{}", r.render());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            // A cube that is too small or does not fit is the user's choice of --size.
            let input = matches!(
                e,
                crate::bench::BenchError::TooSmall | crate::bench::BenchError::TooLarge { .. }
            );
            ExitCode::from(if input { 2 } else { 1 })
        }
    }
}
