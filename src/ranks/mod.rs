//! One domain over several processes (MPI ranks): which process runs which slabs, and, with the
//! `mpi` feature, the communicator, the halo exchange between processes and the monitors and
//! checks that the processes agree on.
//!
//! The split is the plan's ([`crate::plan::ranks`]): the slabs tile [0, nx) as for one process,
//! and rank r runs a contiguous range of them ([`rank_slabs`]), so the arithmetic of every cell
//! is the one process's and the result is bit for bit the same. Rank 0 drives: it runs the
//! shared time loop on a backend that stands for the whole grid (`driver::RankBackend`), which
//! tells the other ranks, step by step, what to do (`driver::follow`): the passes on their own
//! slabs, the halo exchange (copies within a process stay plane copies, copies between
//! processes become non-blocking sends and receives of the tangential planes), and the monitor
//! reads, whose data comes to rank 0 in parts (a probe from the rank that holds its cells, a
//! snapshot region rank by rank, written as a hyperslab per part). So the time loop, the
//! output file and its layout are those of one process; only rank 0 opens the file.
//!
//! Without the `mpi` feature (or without `mpirun`) there is one rank and nothing here runs:
//! [`world`] says so and [`crate::run::run`] goes its usual way.

#[cfg(feature = "mpi")]
mod comm;
pub use crate::decomp::ranks::{rank_slabs, Crossing, Exchange, RankLayout};
#[cfg(feature = "mpi")]
pub(crate) mod driver;
#[cfg(feature = "mpi")]
mod port_links;
#[cfg(feature = "mpi")]
pub(crate) use comm::{World, SCAN_TAG};
#[cfg(feature = "mpi")]
pub(crate) use port_links::MpiPortLinks;

/// Where this process stands among the processes of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranks {
    /// This process's rank, 0-based.
    pub rank: usize,
    /// Processes in the run.
    pub size: usize,
}

impl Ranks {
    /// One process alone: what every run without `mpirun` is.
    pub fn single() -> Self {
        Ranks { rank: 0, size: 1 }
    }

    /// True on the rank that writes the output and reports (rank 0).
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }
}

/// True when this process was started by an MPI launcher (`mpirun`, `srun` with PMI): the
/// launcher's environment says so. Without one the run is a single process and MPI is not
/// even initialised, so a plain `yee run` behaves the same with or without the feature.
pub fn launched_by_mpi() -> bool {
    [
        "OMPI_COMM_WORLD_SIZE",
        "PMI_SIZE",
        "PMIX_RANK",
        "MPI_LOCALNRANKS",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some())
}

/// The number of processes the launcher started, from its environment (None without one).
fn launcher_size() -> Option<usize> {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
}

/// Why this binary cannot run under the launcher that started it, if so: several processes
/// of a build without the `mpi` feature would each run the whole grid on their own and race
/// for the output file.
pub fn unsupported_launch() -> Option<String> {
    let n = launcher_size().filter(|&n| n > 1)?;
    if cfg!(feature = "mpi") {
        return None;
    }
    Some(format!(
        "this yee was built without the `mpi` feature, but mpirun started {n} processes of it: each would run the whole grid alone; rebuild with `cargo build --release --features mpi`, or run one process without mpirun"
    ))
}

/// The MPI environment of this process, held by `main` for the whole program: MPI is
/// finalised when it is dropped. Without the `mpi` feature, or without a launcher, it holds
/// nothing.
pub struct Session {
    #[cfg(feature = "mpi")]
    _universe: Option<mpi::environment::Universe>,
}

/// Start MPI when the process was launched by `mpirun` (and the `mpi` feature is built); call
/// once, first thing in `main`, and keep the session until the program ends.
pub fn init() -> Session {
    #[cfg(feature = "mpi")]
    {
        // Serialized: the run calls MPI from one of its worker pool's threads (one at a time),
        // not from the main thread.
        let universe = if launched_by_mpi() {
            mpi::initialize_with_threading(mpi::Threading::Serialized).map(|(u, _)| u)
        } else {
            None
        };
        Session {
            _universe: universe,
        }
    }
    #[cfg(not(feature = "mpi"))]
    Session {}
}

/// This process's rank and the number of processes ([`Ranks::single`] unless [`init`] started
/// MPI).
pub fn world() -> Ranks {
    #[cfg(feature = "mpi")]
    if let Some(w) = World::get() {
        return Ranks {
            rank: w.rank(),
            size: w.size(),
        };
    }
    Ranks::single()
}

/// The host of each rank, in rank order (collective: every rank calls it; one entry, this
/// host, for a single process).
pub fn hosts() -> Vec<String> {
    #[cfg(feature = "mpi")]
    if let Some(w) = World::get() {
        return w.gather_strings(&this_host());
    }
    vec![this_host()]
}

/// Every rank's `text`, in rank order (collective: every rank calls it; `[text]` for a single
/// process).
pub fn gather_strings(text: &str) -> Vec<String> {
    #[cfg(feature = "mpi")]
    if let Some(w) = World::get() {
        return w.gather_strings(text);
    }
    vec![text.to_string()]
}

/// True when `ok` holds on every rank (collective: every rank calls it; `ok` itself for a
/// single process). For a check that one rank alone makes (rank 0 alone claims the output):
/// the others learn its answer here and stop with it, instead of waiting for it forever in
/// the run's first collective call.
pub fn all_ranks(ok: bool) -> bool {
    #[cfg(feature = "mpi")]
    if let Some(w) = World::get() {
        return w.all(ok);
    }
    ok
}

/// The name of this host.
pub fn this_host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into the buffer it is given.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return "unknown host".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// How many of the ranks in `hosts` (one entry per rank) share rank `rank`'s host: the worker
/// threads of one host are divided among them.
pub fn ranks_on_host(hosts: &[String], rank: usize) -> usize {
    hosts.iter().filter(|h| **h == hosts[rank]).count().max(1)
}

/// The agreement of every rank to start a run that each has prepared (`prepared`, or why
/// not: a message and an exit code), once they all have (collective): over MPI ranks a rank that stopped alone would leave the others
/// waiting for it forever in the run's first collective call. On refusal, the exit code and
/// the lines to print: rank 0's own refusal and every other rank's that differs from it
/// (naming the rank and host: one node may not see a file another does); a rank that could
/// start exits 2 with the others, and ranks other than 0 print nothing. One process: its own
/// refusal.
pub fn agree_to_start<T>(prepared: Result<T, (String, u8)>) -> Result<T, (u8, Vec<String>)> {
    let world = world();
    if world.size == 1 {
        return prepared.map_err(|(message, code)| (code, vec![message]));
    }
    let mine = match &prepared {
        Ok(_) => String::new(),
        Err((message, _)) => format!("{}\t{message}", this_host()),
    };
    let all = gather_strings(&mine);
    let message = |m: &str| {
        m.split_once('\t')
            .map_or(String::new(), |(_, m)| m.to_string())
    };
    let mut lines = Vec::new();
    if world.is_root() {
        let first = message(&all[0]);
        for (r, m) in all.iter().enumerate().filter(|(_, m)| !m.is_empty()) {
            let (host, text) = m.split_once('\t').unwrap_or(("", m));
            if r == 0 {
                lines.push(text.to_string());
            } else if text != first {
                lines.push(format!("rank {r} on {host}: {text}"));
            }
        }
    }
    match prepared {
        Err((_, code)) => Err((code, lines)),
        Ok(_) if all.iter().any(|m| !m.is_empty()) => Err((2, lines)),
        Ok(t) => Ok(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_take_contiguous_slab_ranges_differing_by_at_most_one() {
        assert_eq!(rank_slabs(5, 2), vec![0..3, 3..5]);
        assert_eq!(rank_slabs(6, 3), vec![0..2, 2..4, 4..6]);
        assert_eq!(rank_slabs(4, 1), vec![0..4]);
    }

    #[test]
    fn ranks_of_one_host_share_it() {
        let hosts: Vec<String> = ["a", "b", "a"].iter().map(|s| s.to_string()).collect();
        assert_eq!(ranks_on_host(&hosts, 0), 2);
        assert_eq!(ranks_on_host(&hosts, 1), 1);
    }
}
