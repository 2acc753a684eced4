//! The `yee` command line: parse arguments, call the library, map errors to exit codes
//! (0 success, 1 runtime failure, 2 invalid input, 130 interrupted).

mod progress;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use yee::run::{BackendChoice, RunError, RunOptions};
use yee::scene::SceneError;

#[derive(Parser)]
#[command(name = "yee", version, about = "FDTD electromagnetic simulation: scene files in, HDF5 out")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scene and write its results to HDF5.
    Run {
        /// The scene file (TOML).
        scene: PathBuf,
        /// Output file (default: <simulation.name>.h5 in the current directory).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Engine: auto picks CUDA when the grid fits on the GPUs, else the CPU.
        #[arg(long, value_enum, default_value_t = Backend::Auto)]
        backend: Backend,
        /// Number of slabs the grid is split into along x (default: one per thread).
        #[arg(long)]
        slabs: Option<usize>,
        /// Worker threads for the CPU backend (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// No progress output, only errors.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Check a scene without running it: print the grid and any warnings.
    Check {
        /// The scene file (TOML).
        scene: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Backend {
    Auto,
    Cpu,
    Cuda,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { scene, output, backend, slabs, threads, quiet } => run(scene, output, backend, slabs, threads, quiet),
        Command::Check { scene } => check(scene),
    }
}

/// Load a scene, printing warnings; on failure print the problems and return exit code 2.
fn load(scene: &std::path::Path) -> Result<yee::model::Model, ExitCode> {
    match yee::scene::load(scene) {
        Ok((model, warnings)) => {
            for w in warnings {
                eprintln!("warning: {w}");
            }
            Ok(model)
        }
        Err(e @ SceneError::Io { .. }) | Err(e @ SceneError::Invalid { .. }) => {
            eprintln!("error: {e}");
            Err(ExitCode::from(2))
        }
    }
}

fn check(scene: PathBuf) -> ExitCode {
    match load(&scene) {
        Ok(m) => {
            let g = &m.grid;
            println!(
                "{}: {} x {} x {} = {} cells, {} steps of {:.4e} s, {}",
                scene.display(),
                g.shape[0],
                g.shape[1],
                g.shape[2],
                g.cells(),
                g.steps,
                g.dt,
                m.precision.name()
            );
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

fn run(scene: PathBuf, output: Option<PathBuf>, backend: Backend, slabs: Option<usize>, threads: Option<usize>, quiet: bool) -> ExitCode {
    let model = match load(&scene) {
        Ok(m) => m,
        Err(code) => return code,
    };
    if slabs == Some(0) || threads == Some(0) {
        eprintln!("error: --slabs and --threads must be at least 1");
        return ExitCode::from(2);
    }
    let output = output.unwrap_or_else(|| PathBuf::from(format!("{}.h5", model.name)));
    let mut opts = RunOptions::new(output);
    opts.backend = match backend {
        Backend::Auto => BackendChoice::Auto,
        Backend::Cpu => BackendChoice::Cpu,
        Backend::Cuda => BackendChoice::Cuda,
    };
    opts.slabs = slabs;
    opts.threads = threads;
    let stop = opts.stop.clone();
    // First Ctrl-C: finish the current step, flush and exit 130. Second: leave at once.
    let _ = ctrlc::set_handler(move || {
        if stop.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    let mut observer = progress::TerminalObserver::new(quiet);
    match yee::run::run(&model, &opts, &mut observer) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e @ RunError::Interrupted(_)) => {
            eprintln!("{e}");
            ExitCode::from(130)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
