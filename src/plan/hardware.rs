//! What the plan runs on: GPUs (found by the driver or given as `--gpus 4xH100`), the host's
//! memory, and a small table of common GPUs with their memory and bandwidth.

use serde::Serialize;

/// Memory held back on every GPU used for the CUDA context, the NVRTC module and the driver's
/// own buffers (an assumption; the plan states it).
pub const CUDA_CONTEXT_RESERVE: u64 = 500 << 20;

/// Host memory bandwidth assumed per core (the plan states it; there is no measurement).
pub const HOST_BANDWIDTH_PER_CORE: f64 = 10e9;
/// Cap on the assumed host bandwidth.
pub const HOST_BANDWIDTH_MAX: f64 = 200e9;
/// Bandwidth assumed for a GPU given only by its size (`--gpus 4x80GiB`).
pub const GENERIC_GPU_BANDWIDTH: f64 = 2.0e12;
/// GPU-to-GPU bandwidth assumed over PCIe 4.0 x16 (per direction, achieved).
pub const PCIE_BANDWIDTH: f64 = 25e9;
/// GPU-to-GPU bandwidth of fourth-generation NVLink (Hopper SXM), per direction.
pub const NVLINK4_BANDWIDTH: f64 = 450e9;
/// GPU-to-GPU bandwidth of third-generation NVLink (Ampere), per direction; also what a probed
/// GPU with peer access is assumed to reach.
pub const NVLINK3_BANDWIDTH: f64 = 300e9;

/// A GPU model in the built-in table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuModel {
    /// Name as printed.
    pub name: &'static str,
    /// Spellings accepted in `--gpus` (compared after [`normalise`]).
    pub keys: &'static [&'static str],
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// Peak memory bandwidth, bytes/s.
    pub bandwidth_bytes_per_s: f64,
    /// GPU-to-GPU bandwidth per direction, bytes/s (NVLink on SXM parts, else PCIe).
    pub interconnect_bytes_per_s: f64,
}

/// Common GPUs: vendor figures for memory (decimal GB as sold) and peak bandwidth.
pub const GPU_MODELS: &[GpuModel] = &[
    GpuModel {
        name: "H200 (141 GB)",
        keys: &["H200", "H200SXM"],
        memory_bytes: 141_000_000_000,
        bandwidth_bytes_per_s: 4.8e12,
        interconnect_bytes_per_s: NVLINK4_BANDWIDTH,
    },
    GpuModel {
        name: "H100 SXM (80 GB)",
        keys: &["H100", "H100SXM", "H10080GB"],
        memory_bytes: 80_000_000_000,
        bandwidth_bytes_per_s: 3.35e12,
        interconnect_bytes_per_s: NVLINK4_BANDWIDTH,
    },
    GpuModel {
        name: "H100 PCIe (80 GB)",
        keys: &["H100PCIE"],
        memory_bytes: 80_000_000_000,
        bandwidth_bytes_per_s: 2.0e12,
        interconnect_bytes_per_s: 50e9,
    },
    GpuModel {
        name: "A100 (80 GB)",
        keys: &["A10080GB", "A10080G", "A10080"],
        memory_bytes: 80_000_000_000,
        bandwidth_bytes_per_s: 2.039e12,
        interconnect_bytes_per_s: NVLINK3_BANDWIDTH,
    },
    GpuModel {
        name: "A100 (40 GB)",
        keys: &["A10040GB", "A10040G", "A10040"],
        memory_bytes: 40_000_000_000,
        bandwidth_bytes_per_s: 1.555e12,
        interconnect_bytes_per_s: NVLINK3_BANDWIDTH,
    },
    GpuModel {
        name: "L40S (48 GB)",
        keys: &["L40S"],
        memory_bytes: 48_000_000_000,
        bandwidth_bytes_per_s: 864e9,
        interconnect_bytes_per_s: PCIE_BANDWIDTH,
    },
    GpuModel {
        name: "RTX 4090 (24 GB)",
        keys: &["RTX4090", "4090"],
        memory_bytes: 24_000_000_000,
        bandwidth_bytes_per_s: 1.008e12,
        interconnect_bytes_per_s: PCIE_BANDWIDTH,
    },
    GpuModel {
        name: "RTX 3090 (24 GB)",
        keys: &["RTX3090", "3090"],
        memory_bytes: 24_000_000_000,
        bandwidth_bytes_per_s: 936e9,
        interconnect_bytes_per_s: PCIE_BANDWIDTH,
    },
    GpuModel {
        name: "A10 (24 GB)",
        keys: &["A10"],
        memory_bytes: 24_000_000_000,
        bandwidth_bytes_per_s: 600e9,
        interconnect_bytes_per_s: PCIE_BANDWIDTH,
    },
    GpuModel {
        name: "L4 (24 GB)",
        keys: &["L4"],
        memory_bytes: 24_000_000_000,
        bandwidth_bytes_per_s: 300e9,
        interconnect_bytes_per_s: PCIE_BANDWIDTH,
    },
    GpuModel {
        name: "T4 (16 GB)",
        keys: &["T4"],
        memory_bytes: 16_000_000_000,
        bandwidth_bytes_per_s: 320e9,
        interconnect_bytes_per_s: 12e9,
    },
];

/// Upper-case, without spaces, dashes, underscores or a vendor prefix: "NVIDIA A100-SXM4-40GB"
/// becomes "A100SXM440GB".
pub fn normalise(name: &str) -> String {
    let up: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_uppercase();
    let mut s = up.as_str();
    for prefix in ["NVIDIA", "GEFORCE", "TESLA"] {
        s = s.strip_prefix(prefix).unwrap_or(s);
    }
    s.to_string()
}

/// The forms a size may take, for messages.
const SIZE_FORMS: &str = "a number and a unit: B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024), e.g. 80GiB or 512MB";

/// Why a `--gpus` spec or a size (`--host-memory`) cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// Not a number followed by a unit.
    #[error("`{}` is not a size: give {}", .text, SIZE_FORMS)]
    NotASize {
        /// The text given.
        text: String,
    },
    /// A number without a unit.
    #[error("`{}` has no unit: give {}", .text, SIZE_FORMS)]
    NoUnit {
        /// The text given.
        text: String,
    },
    /// A unit that is not one of the size units.
    #[error("`{}` has an unknown unit `{}`: give {}", .text, .unit, SIZE_FORMS)]
    UnknownUnit {
        /// The text given.
        text: String,
        /// Its unit.
        unit: String,
    },
    /// A size of zero.
    #[error("`{text}` is zero: give a positive size")]
    Zero {
        /// The text given.
        text: String,
    },
    /// A size beyond 2^64 bytes.
    #[error("`{text}` is too large")]
    TooLarge {
        /// The text given.
        text: String,
    },
    /// `A100` without its memory size.
    #[error("`A100` comes with 40 GB or 80 GB: write A100-40GB or A100-80GB")]
    AmbiguousA100,
    /// A model not in the table.
    #[error("unknown GPU model `{}`; known models: {}; or give a size such as 80GB or 80GiB", .name, known_models())]
    UnknownModel {
        /// The name given.
        name: String,
    },
    /// A spec with an empty comma-separated group.
    #[error(
        "`{spec}` has an empty group: write COUNTxSIZE or COUNTxMODEL, e.g. 4x80GiB or 2xH100"
    )]
    EmptyGroup {
        /// The spec given.
        spec: String,
    },
    /// A count that does not fit in a number.
    #[error("`{group}`: the count is too large")]
    CountTooLarge {
        /// The group given.
        group: String,
    },
    /// A count of 0 or above 4096.
    #[error("`{group}`: the GPU count must be 1 to 4096")]
    BadCount {
        /// The group given.
        group: String,
    },
    /// A count with nothing after it.
    #[error("`{group}` gives no size or model after the count: e.g. 4x80GiB or 2xH100")]
    NoSizeOrModel {
        /// The group given.
        group: String,
    },
}

/// Look a model up by name (as written in `--gpus`).
pub fn find_model(name: &str) -> Result<&'static GpuModel, SpecError> {
    let key = normalise(name);
    if key == "A100" {
        return Err(SpecError::AmbiguousA100);
    }
    GPU_MODELS
        .iter()
        .find(|m| m.keys.contains(&key.as_str()))
        .ok_or_else(|| SpecError::UnknownModel {
            name: name.to_string(),
        })
}

fn known_models() -> String {
    [
        "H200",
        "H100",
        "H100-PCIe",
        "A100-80GB",
        "A100-40GB",
        "L40S",
        "RTX4090",
        "RTX3090",
        "A10",
        "L4",
        "T4",
    ]
    .join(", ")
}

/// Parse a memory size: a number and a unit, `B`, `kB`, `MB`, `GB`, `TB` (powers of 1000) or
/// `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024), case-insensitive: `80GiB`, `80GB`, `1.5 TB`.
pub fn parse_size(text: &str) -> Result<u64, SpecError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let text_owned = || text.to_string();
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') || num.matches('.').count() > 1
    {
        return Err(SpecError::NotASize { text: text_owned() });
    }
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        "" => return Err(SpecError::NoUnit { text: text_owned() }),
        _ => {
            return Err(SpecError::UnknownUnit {
                text: text_owned(),
                unit: unit.to_string(),
            })
        }
    };
    let bytes = match num.split_once('.') {
        None => num.parse::<u64>().ok().and_then(|n| n.checked_mul(mult)),
        Some(_) => {
            let v = num
                .parse::<f64>()
                .map_err(|_| SpecError::NotASize { text: text_owned() })?
                * mult as f64;
            (v < 9.0e18).then(|| v.round() as u64)
        }
    };
    match bytes {
        Some(0) => Err(SpecError::Zero { text: text_owned() }),
        Some(b) => Ok(b),
        None => Err(SpecError::TooLarge { text: text_owned() }),
    }
}

/// Whether a device is a GPU or the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// A CUDA GPU.
    Gpu,
    /// The host's memory and cores (the CPU backend).
    Host,
}

/// A device the plan can place slabs on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Device {
    /// Name as printed.
    pub name: String,
    /// GPU or host.
    pub kind: DeviceKind,
    /// Memory available for the run in bytes (free memory of a probed GPU, the whole memory
    /// of a GPU given with `--gpus`, MemAvailable of the host).
    pub memory_bytes: u64,
    /// Peak memory bandwidth, bytes/s.
    pub bandwidth_bytes_per_s: f64,
    /// True when the bandwidth is an assumption rather than a figure for this device.
    pub bandwidth_assumed: bool,
    /// Bandwidth to the neighbouring device for halo copies, bytes/s.
    #[serde(skip)]
    pub interconnect_bytes_per_s: f64,
}

impl Device {
    /// A GPU of a table model.
    pub fn from_model(m: &GpuModel) -> Device {
        Device {
            name: m.name.to_string(),
            kind: DeviceKind::Gpu,
            memory_bytes: m.memory_bytes,
            bandwidth_bytes_per_s: m.bandwidth_bytes_per_s,
            bandwidth_assumed: false,
            interconnect_bytes_per_s: m.interconnect_bytes_per_s,
        }
    }

    /// A GPU known only by its memory size.
    pub fn generic_gpu(memory_bytes: u64, label: &str) -> Device {
        Device {
            name: format!("{label} GPU"),
            kind: DeviceKind::Gpu,
            memory_bytes,
            bandwidth_bytes_per_s: GENERIC_GPU_BANDWIDTH,
            bandwidth_assumed: true,
            interconnect_bytes_per_s: PCIE_BANDWIDTH,
        }
    }

    /// The host: `memory_bytes` available and the assumed bandwidth for `cores` cores.
    pub fn host(memory_bytes: u64, cores: usize) -> Device {
        Device {
            name: "host".into(),
            kind: DeviceKind::Host,
            memory_bytes,
            bandwidth_bytes_per_s: (cores as f64 * HOST_BANDWIDTH_PER_CORE).min(HOST_BANDWIDTH_MAX),
            bandwidth_assumed: true,
            interconnect_bytes_per_s: f64::INFINITY,
        }
    }

    /// Memory left for slabs: a GPU loses the CUDA context reserve.
    pub fn usable_bytes(&self) -> u64 {
        match self.kind {
            DeviceKind::Gpu => self.memory_bytes.saturating_sub(CUDA_CONTEXT_RESERVE),
            DeviceKind::Host => self.memory_bytes,
        }
    }
}

/// Parse `--gpus`: comma-separated groups `COUNTxSIZE` or `COUNTxMODEL` (the count defaults to
/// 1): `4x80GiB`, `2xH100`, `8xH200`, `1xH100,1xA100-40GB`.
pub fn parse_gpus(spec: &str) -> Result<Vec<Device>, SpecError> {
    let mut out = Vec::new();
    for group in spec.split(',').map(str::trim) {
        if group.is_empty() {
            return Err(SpecError::EmptyGroup {
                spec: spec.to_string(),
            });
        }
        let (count, what) = match group.find(['x', 'X']) {
            Some(i) if i > 0 && group[..i].chars().all(|c| c.is_ascii_digit()) => {
                let n: usize = group[..i].parse().map_err(|_| SpecError::CountTooLarge {
                    group: group.to_string(),
                })?;
                (n, group[i + 1..].trim())
            }
            _ => (1, group),
        };
        if count == 0 || count > 4096 {
            return Err(SpecError::BadCount {
                group: group.to_string(),
            });
        }
        if what.is_empty() {
            return Err(SpecError::NoSizeOrModel {
                group: group.to_string(),
            });
        }
        let device = if what.starts_with(|c: char| c.is_ascii_digit())
            && !GPU_MODELS
                .iter()
                .any(|m| m.keys.contains(&normalise(what).as_str()))
        {
            let bytes = parse_size(what)?;
            Device::generic_gpu(bytes, &what.replace(' ', ""))
        } else {
            Device::from_model(find_model(what)?)
        };
        out.extend(std::iter::repeat_n(device, count));
    }
    Ok(out)
}

/// The triad over three arrays of `n` f64, best of `passes`, in bytes/s (24 bytes per element).
pub fn host_triad(n: usize, passes: usize) -> f64 {
    host_triad_passes(n, passes).into_iter().fold(0.0, f64::max)
}

/// The triad over three arrays of `n` f64: the bandwidth of each of `passes` passes, in bytes/s.
pub fn host_triad_passes(n: usize, passes: usize) -> Vec<f64> {
    use rayon::prelude::*;
    use std::time::Instant;
    let b = vec![1.0f64; n];
    let c = vec![2.0f64; n];
    let mut a = vec![0.0f64; n];
    let s = 3.0;
    let mut out = Vec::with_capacity(passes);
    for _ in 0..passes {
        let t = Instant::now();
        a.par_chunks_mut(1 << 16)
            .zip(b.par_chunks(1 << 16))
            .zip(c.par_chunks(1 << 16))
            .for_each(|((a, b), c)| {
                for ((x, y), z) in a.iter_mut().zip(b).zip(c) {
                    *x = y + s * z;
                }
            });
        out.push(24.0 * n as f64 / t.elapsed().as_secs_f64().max(1e-9));
    }
    std::hint::black_box(&a);
    out
}

/// The host's available memory: MemAvailable from /proc/meminfo, if it can be read.
pub fn host_memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Everything the planner may use.
#[derive(Debug, Clone, PartialEq)]
pub struct Hardware {
    /// The GPUs (empty when none is present or given).
    pub gpus: Vec<Device>,
    /// Where the GPUs came from, or why there are none.
    pub gpu_note: String,
    /// The host.
    pub host: Device,
    /// Where the host figure came from.
    pub host_note: String,
    /// Host cores (the CPU backend's worker threads).
    pub cores: usize,
    /// Whether every GPU can read and write every other's memory directly (peer access, as
    /// over NVLink). Without it the CUDA engine stages each halo copy between two GPUs
    /// through a pinned host plane, which the plan then counts (`Bytes::staged_halos`).
    pub peer_access: bool,
    /// Where the host bandwidth came from, when it is not the per-core assumption: measured
    /// now, or read from the cache (which file, how old).
    pub bandwidth_note: Option<String>,
}

/// A measured host bandwidth is reused for this long (seconds) before it is measured again.
pub const BANDWIDTH_CACHE_MAX_AGE_S: u64 = 7 * 86400;

/// Where the measured host bandwidth is kept: `$XDG_CACHE_HOME/yee/host-bandwidth.json`, else
/// `$HOME/.cache/yee/host-bandwidth.json`; None without either variable.
pub fn bandwidth_cache_path() -> Option<std::path::PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::path::PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?)
            .join(".cache"),
    };
    Some(base.join("yee").join("host-bandwidth.json"))
}

/// The cache file's contents.
#[derive(serde::Serialize, serde::Deserialize)]
struct BandwidthCache {
    /// Cores the measurement ran on (a different count measures again).
    cores: usize,
    /// The triad bandwidth, bytes/s.
    bandwidth_bytes_per_s: f64,
    /// When it was measured, seconds since the Unix epoch.
    measured_unix_s: u64,
}

/// The 1-minute load average: `YEE_LOAD_AVERAGE` where set (tests, which run beside each
/// other, say how busy the machine is to be taken as), else `/proc/loadavg`; None where there
/// is neither.
fn load_average() -> Option<f64> {
    if let Some(v) = crate::fault::hook("YEE_LOAD_AVERAGE").and_then(|v| v.parse().ok()) {
        return Some(v);
    }
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// True if a load average of `load` on `cores` cores means other work is running: more than
/// half a core busy on average over the last minute (a quiet machine reads 0.0-0.3).
fn busy(load: f64, cores: usize) -> bool {
    load > 0.5 && load > 0.25 * cores as f64
}

/// "just now", "5 min ago", "3.2 h ago", "2 days ago".
fn age(s: u64) -> String {
    if s < 60 {
        "less than a minute ago".into()
    } else {
        format!("{} ago", super::report::duration_h(s as f64))
    }
}

fn now_unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Hardware {
    /// Replace the assumed host bandwidth with a measured one: from the cache
    /// ([`bandwidth_cache_path`]) when it was measured on as many cores less than
    /// [`BANDWIDTH_CACHE_MAX_AGE_S`] ago, else a STREAM-like triad measured now over three 64 MiB
    /// arrays (beyond the caches of common CPUs), the median of ten passes after a warm-up
    /// (about 0.2 s), which is then cached. One pass varies by 2x on a busy machine; the median
    /// of many, kept between runs, gives plans that do not move from one run to the next.
    pub fn measure_host_bandwidth(&mut self) {
        let path = bandwidth_cache_path();
        let now = now_unix_s();
        let cached = path
            .as_ref()
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice::<BandwidthCache>(&b).ok())
            .filter(|c| {
                c.cores == self.cores
                    && c.bandwidth_bytes_per_s.is_finite()
                    && c.bandwidth_bytes_per_s > 0.0
                    && now.saturating_sub(c.measured_unix_s) < BANDWIDTH_CACHE_MAX_AGE_S
            });
        self.host.bandwidth_assumed = false;
        if let (Some(c), Some(p)) = (cached, &path) {
            self.host.bandwidth_bytes_per_s = c.bandwidth_bytes_per_s;
            self.bandwidth_note = Some(format!(
                "measured {} on {} cores (STREAM-like triad, median of 10 passes) and read from the cache {} (delete it to measure again)",
                age(now.saturating_sub(c.measured_unix_s)),
                c.cores,
                p.display()
            ));
            return;
        }
        // The first pass faults the pages in; the median of the ten after it is the figure
        // (the best pass, STREAM's convention, follows the luckiest moment on a shared host).
        let load = load_average();
        let mut passes = host_triad_passes(8 << 20, 11);
        passes.remove(0);
        passes.sort_by(f64::total_cmp);
        let b = 0.5 * (passes[4] + passes[5]);
        self.host.bandwidth_bytes_per_s = b;
        // Other work running (a build, another run) takes its share of the bandwidth: such a
        // figure serves this plan but is not kept for a week of plans (one measured during a
        // build read a third of the quiet figure).
        if let Some(load) = load.filter(|&l| busy(l, self.cores)) {
            self.bandwidth_note = Some(format!(
                "measured just now on {} cores (STREAM-like triad, median of 10 passes) while the machine was busy (load average {load:.1}): not cached, so the next plan measures again",
                self.cores
            ));
            return;
        }
        let saved = path.as_ref().and_then(|p| {
            let entry = BandwidthCache {
                cores: self.cores,
                bandwidth_bytes_per_s: b,
                measured_unix_s: now,
            };
            std::fs::create_dir_all(p.parent()?).ok()?;
            let text = serde_json::to_string_pretty(&entry).ok()?;
            // Write beside it and rename, so a concurrent plan never reads half a file.
            let tmp = p.with_extension(format!("json.{}", std::process::id()));
            std::fs::write(&tmp, text).ok()?;
            std::fs::rename(&tmp, p).ok()
        });
        self.bandwidth_note = Some(match (saved, &path) {
            (Some(()), Some(p)) => format!(
                "measured just now on {} cores (STREAM-like triad, median of 10 passes) and cached in {} for a week",
                self.cores,
                p.display()
            ),
            _ => format!(
                "measured just now on {} cores (STREAM-like triad, median of 10 passes); it could not be cached",
                self.cores
            ),
        });
    }

    /// Hardware with exactly these GPUs and host memory, for tests and what-if plans.
    pub fn new(gpus: Vec<Device>, host_memory: u64, cores: usize) -> Hardware {
        Hardware {
            gpus,
            gpu_note: "given".into(),
            host: Device::host(host_memory, cores),
            host_note: "given".into(),
            cores,
            bandwidth_note: None,
            peer_access: true,
        }
    }

    /// The same hardware with the host's available memory read again (unless it was given):
    /// a re-plan after a failed start checks the host as it is now.
    pub fn with_fresh_host_memory(&self) -> Hardware {
        let mut hw = self.clone();
        if hw.host_note.starts_with("MemAvailable") {
            if let Some(b) = host_memory_available() {
                hw.host.memory_bytes = b;
            }
        }
        hw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_is_busy_with_more_than_half_a_core_and_a_quarter_of_them_in_use() {
        assert!(!busy(0.2, 2));
        assert!(!busy(0.5, 2));
        assert!(busy(0.6, 2));
        assert!(busy(1.9, 2));
        assert!(!busy(1.9, 16));
        assert!(busy(4.5, 16));
        if let Some(l) = load_average() {
            assert!(l >= 0.0 && l.is_finite());
        }
    }

    #[test]
    fn sizes_keep_decimal_and_binary_units_apart() {
        assert_eq!(parse_size("80GiB"), Ok(80 << 30));
        assert_eq!(parse_size("80GB"), Ok(80_000_000_000));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1.5 TB"), Ok(1_500_000_000_000));
        assert_eq!(parse_size("1.5gib"), Ok(3 << 29));
        assert_eq!(parse_size("4096B"), Ok(4096));
        for bad in [
            "80",
            "80G",
            "GB",
            "-1GB",
            "1..5GB",
            ".5GB",
            "0GB",
            "80 parsecs",
            "99999999999TB",
        ] {
            assert!(parse_size(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn gpu_specs_by_size_and_model() {
        let g = parse_gpus("4x80GiB").unwrap();
        assert_eq!(g.len(), 4);
        assert_eq!(g[0].memory_bytes, 80 << 30);
        assert!(g[0].bandwidth_assumed);
        let g = parse_gpus("2xH100").unwrap();
        assert_eq!(
            (g.len(), g[0].memory_bytes, g[0].bandwidth_bytes_per_s),
            (2, 80_000_000_000, 3.35e12)
        );
        let g = parse_gpus("8xH200").unwrap();
        assert_eq!(
            (g.len(), g[0].memory_bytes, g[0].bandwidth_bytes_per_s),
            (8, 141_000_000_000, 4.8e12)
        );
        let g = parse_gpus("1xH100, 1xa100-40gb,RTX4090").unwrap();
        assert_eq!(
            g.iter()
                .map(|d| d.memory_bytes / 1_000_000_000)
                .collect::<Vec<_>>(),
            vec![80, 40, 24]
        );
        assert_eq!(
            parse_gpus("1xA100-80GB").unwrap()[0].bandwidth_bytes_per_s,
            2.039e12
        );
        assert_eq!(parse_gpus("L40S").unwrap()[0].bandwidth_bytes_per_s, 864e9);
        assert_eq!(
            parse_gpus("1x3090").unwrap()[0].bandwidth_bytes_per_s,
            936e9
        );
        for bad in [
            "0xH100",
            "4x",
            "4xB9000",
            "4x80",
            "2xA100",
            "",
            "1xH100,,1xH100",
            "x80GB",
        ] {
            assert!(parse_gpus(bad).is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn probed_names_match_the_table_spellings() {
        assert_eq!(normalise("NVIDIA A100-SXM4-40GB"), "A100SXM440GB");
        assert_eq!(normalise("NVIDIA GeForce RTX 4090"), "RTX4090");
    }
}
