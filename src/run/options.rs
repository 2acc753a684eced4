//! The engine options of `yee run` and `yee resume` as the user gave them: the counts that
//! are refused, and the options that cannot be honoured as given, each said in a note rather
//! than silently clamped or ignored.

use crate::model::Model;
use crate::plan::BackendChoice;

/// The most worker threads a run takes. More threads than cores only share them (the run
/// says so); thousands of them spend the run waking each other (5000 on 2 cores did not
/// finish a 10-step run of 1728 cells, nor stop on SIGTERM between its steps).
pub const MAX_THREADS: usize = 1024;

/// The engine options a user gives `yee run`, `yee resume` (and, in part, `yee bench`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineChoice {
    /// `--backend`.
    pub backend: BackendChoice,
    /// `--slabs`.
    pub slabs: Option<usize>,
    /// `--threads`.
    pub threads: Option<usize>,
    /// `--gpus`, by driver ordinal.
    pub gpus: Option<Vec<usize>>,
    /// `--slabs-per-gpu`.
    pub slabs_per_gpu: Option<usize>,
}

/// Why `--threads` cannot be used, if so.
pub fn threads_refused(threads: Option<usize>) -> Option<String> {
    threads.filter(|&t| t > MAX_THREADS).map(|t| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        format!("--threads {t} is too many: at most {MAX_THREADS} (this machine has {cores} cores; the default is one thread per core)")
    })
}

impl EngineChoice {
    /// Why the counts cannot be used, if so: each at least 1, threads at most
    /// [`MAX_THREADS`].
    pub fn refused(&self) -> Option<String> {
        if self.slabs == Some(0) || self.threads == Some(0) || self.slabs_per_gpu == Some(0) {
            return Some("--slabs, --threads and --slabs-per-gpu must be at least 1".into());
        }
        threads_refused(self.threads)
    }

    /// The options that cannot be honoured as given for `model`, and what is done instead.
    pub fn notes(&self, model: &Model) -> Vec<String> {
        let mut notes = Vec::new();
        let nx = model.grid.shape[0];
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cuda_flags: Vec<&str> = [
            (self.gpus.is_some(), "--gpus"),
            (self.slabs_per_gpu.is_some(), "--slabs-per-gpu"),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect();
        let cuda_flags = cuda_flags.join(" and ");
        match self.backend {
            BackendChoice::Cpu if !cuda_flags.is_empty() => notes.push(format!(
                "{cuda_flags} apply to the CUDA backend only: ignored with --backend cpu"
            )),
            BackendChoice::Auto if !cuda_flags.is_empty() => {
                if let Err(e) = crate::backend::cuda::probe_gpus() {
                    notes.push(format!(
                        "{cuda_flags} ignored: CUDA cannot be used here ({e}), so the run uses the CPU"
                    ));
                }
            }
            BackendChoice::Cuda if self.slabs.is_some() => notes.push(
                "--slabs applies to the CPU backend (on CUDA, --slabs-per-gpu splits each GPU's share): ignored with --backend cuda"
                    .to_string(),
            ),
            _ => {}
        }
        if let Some(s) = self.slabs.filter(|&s| s > nx) {
            notes.push(format!(
                "--slabs {s} is more than the grid's {nx} x planes (a slab is at least one plane): the CPU backend uses {nx} slabs"
            ));
        }
        if let Some(t) = self.threads {
            if t > cores {
                notes.push(format!(
                    "--threads {t} is more than this machine's {cores} cores: the threads share them"
                ));
            }
            let k = crate::plan::cpu_slabs(nx, t, self.slabs);
            if t > k {
                notes.push(format!(
                    "the CPU backend splits the grid into {k} slab{} ({}), so at most {k} of the {t} threads work at once",
                    if k == 1 { "" } else { "s" },
                    if self.slabs.is_some() { "--slabs" } else { "each at least 8 x planes thick; --slabs to choose" }
                ));
            }
        }
        notes
    }
}

/// Why a command cannot go on: the message (printed after "error: ") and the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What is wrong, in one sentence.
    pub message: String,
    /// The exit code: 2 for bad input or a result that cannot be written.
    pub code: u8,
}

impl Refusal {
    /// Bad input or a result that cannot be written: exit 2.
    pub fn input(message: impl Into<String>) -> Self {
        Refusal {
            message: message.into(),
            code: 2,
        }
    }
}
