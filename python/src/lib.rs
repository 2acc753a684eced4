//! The yee engine as the Python extension `yee._native`: the command line, scene checking and
//! planning, each with the same Rust code and messages as the `yee` binary. The Python package
//! (`python/yee`) builds its `Scene`, `SceneError` and `sweep` on these few functions.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Run the `yee` command line with `argv` (the program's name first) in this process, the GIL
/// released while it runs; its exit status (0 success, 1 failure, 2 bad input, 128 + signal).
/// The signal handlers a run installs are put back afterwards, so Python's Ctrl-C returns.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    let code = py.detach(|| yee::cli::main(argv).0);
    yee::cli::signals::restore();
    code
}

/// Check scene `text` (`file` names it in messages and is the directory its relative paths are
/// read from): a dict with `ok`, `problems` (tuples of key path, line, column, message),
/// `warnings`, `lines` (what `yee check` prints) and `message` (the whole error text).
#[pyfunction]
fn check<'py>(py: Python<'py>, text: &str, file: &str) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    match py.detach(|| yee::scene::load_str(text, file)) {
        Ok((model, warnings)) => {
            out.set_item("ok", true)?;
            out.set_item("problems", Vec::<(String, usize, usize, String)>::new())?;
            out.set_item("warnings", warnings)?;
            out.set_item("lines", yee::cli::check_lines(file, &model))?;
            out.set_item("message", "")?;
        }
        Err(e) => {
            let problems: Vec<(String, usize, usize, String)> = match &e {
                yee::scene::SceneError::Invalid { problems, .. } => problems
                    .iter()
                    .map(|p| (p.key.clone(), p.line, p.column, p.message.clone()))
                    .collect(),
                yee::scene::SceneError::Io { message, .. } => {
                    vec![(String::new(), 0, 0, message.clone())]
                }
            };
            out.set_item("ok", false)?;
            out.set_item("problems", problems)?;
            out.set_item("warnings", Vec::<String>::new())?;
            out.set_item("lines", Vec::<String>::new())?;
            out.set_item("message", e.to_string())?;
        }
    }
    Ok(out)
}

/// The plan of scene `text` (valid: check it first) as `yee plan` gives it: (the JSON object
/// as text, the report). The options are `yee plan`'s: `gpus` as `--gpus` ("4x80GiB"; None:
/// the GPUs found here), `host_memory` as `--host-memory` ("256GiB"; None: this machine's),
/// `backend` ("auto", "cpu" or "cuda"), `price` per GPU-hour, `ranks` (MPI ranks, one per
/// node) with `network` ("100Gbit/s").
#[pyfunction]
#[pyo3(signature = (text, file, gpus=None, host_memory=None, backend=None, price=None, ranks=None, network=None))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, each optional
fn plan(
    py: Python<'_>,
    text: &str,
    file: &str,
    gpus: Option<&str>,
    host_memory: Option<&str>,
    backend: Option<&str>,
    price: Option<f64>,
    ranks: Option<usize>,
    network: Option<&str>,
) -> PyResult<(String, String)> {
    let bad = |key: &str, e: String| PyValueError::new_err(format!("{key}: {e}"));
    let gpus = gpus
        .map(yee::plan::parse_gpus)
        .transpose()
        .map_err(|e| bad("gpus", e.to_string()))?;
    let host_memory = host_memory
        .map(yee::plan::parse_size)
        .transpose()
        .map_err(|e| bad("host_memory", e.to_string()))?;
    let backend = match backend {
        None => yee::run::BackendChoice::default(),
        Some(b) => b.parse::<yee::run::BackendChoice>().map_err(|_| {
            bad(
                "backend",
                format!(
                    "`{b}` is not one of {}",
                    yee::run::BackendChoice::NAMES.join(", ")
                ),
            )
        })?,
    };
    let network = network
        .map(yee::plan::ranks::parse_network)
        .transpose()
        .map_err(|e| bad("network", e))?;
    if ranks == Some(0) {
        return Err(bad("ranks", "at least 1".into()));
    }
    let (model, _) =
        yee::scene::load_str(text, file).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let report = py.detach(|| {
        let options = yee::plan::PlanOptions {
            backend,
            price_per_gpu_hour: price,
            ..Default::default()
        };
        let ranks = ranks.map(|r| (r, network));
        yee::cli::plan_report(&model, gpus, host_memory, &options, ranks)
    });
    Ok((report.json.to_string(), report.text))
}

/// The engine's version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The module `yee._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
