//! An S-parameter sweep's results: the per-port runs' amplitudes read back, the S-matrix in
//! `/sparameters/` of the sweep's result file (design.md section 6), and the Touchstone file
//! next to it.

use super::{scalar_attr, str_attr, Complex};
use crate::model::Model;
use std::path::{Path, PathBuf};

/// An S-matrix: [frequency][out port][in port].
pub type SMatrix = Vec<Vec<Vec<Complex>>>;

/// The result file of the run that excites `port` of a sweep writing `output`:
/// `<stem>.port-<port>.h5` beside it.
pub fn port_output(output: &Path, port: &str) -> PathBuf {
    let stem = output
        .file_stem()
        .map_or("result".into(), |s| s.to_string_lossy().into_owned());
    output.with_file_name(format!("{stem}.port-{port}.h5"))
}

/// True when `path` holds a finished run of `model`'s scene (`complete` and the same scene
/// text): an excitation a sweep need not run again.
pub fn finished_run(path: &Path, model: &Model) -> bool {
    let read = || -> hdf5::Result<bool> {
        let f = hdf5::File::open(path)?;
        let complete: bool = f.attr("complete")?.read_scalar()?;
        let scene: hdf5::types::VarLenUnicode = f.attr("scene")?.read_scalar()?;
        Ok(complete && scene.as_str() == model.scene_text)
    };
    path.is_file() && read().unwrap_or(false)
}

/// A mode monitor's amplitudes in a finished run: its frequencies and, per frequency, the
/// (forward, backward) amplitude of its first mode.
pub fn port_amplitudes(path: &Path, port: &str) -> hdf5::Result<(Vec<f64>, Vec<[Complex; 2]>)> {
    let f = hdf5::File::open(path)?;
    let g = f.group(&format!("modes/{port}"))?;
    let frequency = g.dataset("frequency")?.read_raw::<f64>()?;
    let modes = g.dataset("forward")?.shape()[1];
    let read = |name: &str| -> hdf5::Result<Vec<Complex>> {
        let all = g.dataset(name)?.read_raw::<Complex>()?;
        Ok(all.chunks(modes).map(|row| row[0]).collect())
    };
    let (forward, backward) = (read("forward")?, read("backward")?);
    Ok((
        frequency,
        forward
            .into_iter()
            .zip(backward)
            .map(|(a, b)| [a, b])
            .collect(),
    ))
}

/// Write the S-matrix `s` ([frequency][out port][in port]) of `model`'s ports at `frequency`
/// to a new file `path` as `/sparameters/` (`frequency`, `S` complex [f, N, N], `ports`), with
/// the scene and the per-port result files as attributes.
pub fn write(
    path: &Path,
    model: &Model,
    frequency: &[f64],
    s: &[Vec<Vec<Complex>>],
    runs: &[PathBuf],
) -> hdf5::Result<()> {
    let sp = model
        .sparameters
        .as_ref()
        .expect("a sweep's model has ports");
    let n = sp.ports.len();
    let file = hdf5::File::create(path)?;
    str_attr(&file, "yee_version", env!("CARGO_PKG_VERSION"))?;
    str_attr(&file, "scene", &model.scene_text)?;
    str_attr(&file, "name", &model.name)?;
    str_attr(&file, "length_unit", &model.length_unit)?;
    let g = file.create_group("sparameters")?;
    g.new_dataset_builder()
        .with_data(frequency)
        .create("frequency")?;
    let flat: Vec<Complex> = s.iter().flatten().flatten().copied().collect();
    g.new_dataset::<Complex>()
        .shape((frequency.len(), n, n))
        .create("S")?
        .write_raw(&flat)?;
    let names: Vec<hdf5::types::VarLenUnicode> = sp
        .ports
        .iter()
        .map(|p| p.parse().expect("a port name is valid text"))
        .collect();
    g.new_dataset_builder().with_data(&names).create("ports")?;
    str_attr(&g, "definition", "S = B A^-1 per frequency, where column k of A (B) holds the waves entering (leaving) every port in the run that excites port k: a mode port's unit-power mode amplitudes at its monitor (entering along its source's direction), a lumped port's power waves (V + Z I) / (2 sqrt(Re Z)) and (V - Z* I) / (2 sqrt(Re Z)) at its gap; S[f, j, k] = b_j / a_k where the other ports absorb perfectly")?;
    scalar_attr(&g, "reference_impedance", sp.reference_impedance)?;
    let runs: Vec<String> = runs.iter().map(|r| r.display().to_string()).collect();
    str_attr(&g, "runs", &runs.join("\n"))?;
    scalar_attr(&file, "complete", true)?;
    Ok(())
}

/// The Touchstone 1.1 file of an S-matrix: `# Hz S MA R <z>`, one line per frequency with
/// every `S[j][k]` as magnitude and angle (degrees), in Touchstone's order (row by row; for two
/// ports S11 S21 S12 S22).
pub fn touchstone(
    ports: &[String],
    impedance: f64,
    frequency: &[f64],
    s: &[Vec<Vec<Complex>>],
) -> String {
    let n = ports.len();
    let mut out = format!(
        "! yee S-parameters, ports {}\n! mode ports: unit-power modes, phases referred to each monitor plane; lumped ports: power waves at the gap\n# Hz S MA R {impedance}\n",
        ports.join(", ")
    );
    let pair = |c: Complex| format!(" {:.9e} {:.6}", c.r.hypot(c.i), c.i.atan2(c.r).to_degrees());
    for (f, m) in frequency.iter().zip(s) {
        out.push_str(&format!("{f:.9e}"));
        if n <= 2 {
            // One or two ports: one line, column by column (S11 S21 S12 S22).
            for k in 0..n {
                for row in m.iter().take(n) {
                    out.push_str(&pair(row[k]));
                }
            }
            out.push('\n');
            continue;
        }
        // Three ports and more: row by row, at most four pairs a line.
        for row in m.iter().take(n) {
            for (k, chunk) in row[..n].chunks(4).enumerate() {
                if k > 0 || !out.ends_with(&format!("{f:.9e}")) {
                    out.push_str("               ");
                }
                chunk.iter().for_each(|c| out.push_str(&pair(*c)));
                out.push('\n');
            }
        }
    }
    out
}

/// The Touchstone file's path beside `output`: `<stem>.s<N>p`.
pub fn touchstone_path(output: &Path, ports: usize) -> PathBuf {
    output.with_extension(format!("s{ports}p"))
}
