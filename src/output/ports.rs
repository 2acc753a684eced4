//! `/ports/<name>/` and `/elements/<name>/`: the voltage and current of lumped ports and
//! elements, per step, and their spectra at the end of the run.
//!
//! The series are probe series (the writer's probe sets, after the model's probes), so they grow,
//! flush, resume and survive a killed run as probes do. The spectra (`frequency`, `impedance`,
//! and for a port `S11`, `incident_power`, `accepted_power`; for an element `power`) are
//! formed from the whole series ([`Terminal::spectra`]) at the end and at each checkpoint; a
//! port also gets its power waves `a` (into the device) and `b` (out of it), which an
//! S-parameter sweep reads.

use super::{arr_attr, growable, scalar_attr, str_attr, Complex, Hdf5Writer, ProbeSet};
use crate::model::{Model, Terminal, TerminalKind};
use crate::real::Real;
use hdf5::{File, Group};

/// The group of terminal `t`: `ports/<name>` or `elements/<name>`.
fn group_path(t: &Terminal) -> String {
    match t.kind {
        TerminalKind::Port { .. } => format!("ports/{}", t.name),
        TerminalKind::Element => format!("elements/{}", t.name),
    }
}

/// The series datasets of every terminal of `model` in a new file, as probe sets in model
/// order: `time`, `voltage` (at t = n dt) and `current` (at (n - 1/2) dt, its `time_offset`).
pub(super) fn create<T: Real>(
    file: &File,
    model: &Model,
    chunk: usize,
) -> hdf5::Result<Vec<ProbeSet>> {
    let dt = model.grid.dt;
    let mut sets = Vec::new();
    for t in &model.terminals {
        let grp = file.create_group(&group_path(t))?;
        arr_attr(&grp, "position", &t.probe.position)?;
        let time = growable::<f64>(&grp, "time", chunk)?;
        let voltage = growable::<T>(&grp, "voltage", chunk)?;
        scalar_attr(&voltage, "time_offset", 0.0)?;
        let current = growable::<T>(&grp, "current", chunk)?;
        scalar_attr(&current, "time_offset", -0.5 * dt)?;
        match t.kind {
            TerminalKind::Port {
                impedance,
                amplitude,
                ..
            } => {
                str_attr(
                    &voltage,
                    "definition",
                    "the potential of the gap's end in `direction` over its start (V)",
                )?;
                str_attr(&current, "definition", "the current along `direction` across the gap, into the device at the gap's end (A): the loop integral of H around the gap")?;
                arr_attr(&grp, "impedance", &impedance)?;
                scalar_attr(&grp, "amplitude", amplitude)?;
            }
            TerminalKind::Element => {
                str_attr(
                    &voltage,
                    "definition",
                    "the voltage drop along the element's axis (V)",
                )?;
                str_attr(&current, "definition", "the current along the element's axis (A): the loop integral of H around its box")?;
            }
        }
        sets.push(ProbeSet {
            datasets: vec![voltage, current],
            time,
            values: vec![Vec::new(), Vec::new()],
            written: 0,
        });
    }
    Ok(sets)
}

/// The series datasets [`create`] made in `file`, reopened to continue a run.
pub(super) fn open(file: &File, model: &Model) -> hdf5::Result<Vec<ProbeSet>> {
    model
        .terminals
        .iter()
        .map(|t| {
            let grp = file.group(&group_path(t))?;
            Ok(ProbeSet {
                datasets: vec![grp.dataset("voltage")?, grp.dataset("current")?],
                time: grp.dataset("time")?,
                values: vec![Vec::new(), Vec::new()],
                written: 0,
            })
        })
        .collect()
}

/// The antenna figures over the pattern's angles in a far-field group
/// ([`Hdf5Writer::write_antenna`]), each 4 pi U / P with the power of the same index in
/// the dataset named beside it (P_rad, the box's `power`; P_acc; P_inc): a re-projection of the
/// pattern (`yee farfield`) rewrites them from the stored powers.
pub(super) const ANTENNA_PATTERNS: [(&str, &str); 3] = [
    ("directivity", "power"),
    ("gain", "accepted_power"),
    ("realized_gain", "incident_power"),
];

/// A lumped port's frequencies and power waves (a, b) per frequency, from a finished run's file.
pub fn port_waves(
    path: &std::path::Path,
    port: &str,
) -> hdf5::Result<(Vec<f64>, Vec<[Complex; 2]>)> {
    let f = File::open(path)?;
    let g = f.group(&format!("ports/{port}"))?;
    let frequency = g.dataset("frequency")?.read_raw::<f64>()?;
    let a = g.dataset("a")?.read_raw::<Complex>()?;
    let b = g.dataset("b")?.read_raw::<Complex>()?;
    Ok((
        frequency,
        a.into_iter().zip(b).map(|(a, b)| [a, b]).collect(),
    ))
}

/// Write (or rewrite) `name` in `grp` as `data`.
fn put<T: hdf5::H5Type>(grp: &Group, name: &str, data: &[T]) -> hdf5::Result<()> {
    if grp.link_exists(name) {
        grp.unlink(name)?;
    }
    grp.new_dataset_builder().with_data(data).create(name)?;
    Ok(())
}

impl Hdf5Writer {
    /// The antenna figures of far-field monitor `index` when `model` drives one lumped port:
    /// beside its `intensity` U ([`crate::far_field::Pattern`]), `directivity` 4 pi U / P_rad,
    /// `gain` 4 pi U / P_acc and `realized_gain` 4 pi U / P_inc [frequency, theta, phi], and
    /// `radiation_efficiency` P_rad / P_acc, `accepted_power` P_acc and `incident_power` P_inc
    /// `[frequency]`, with P_rad `radiated` (the box's net outward flux) and the port's powers
    /// at the monitor's frequencies, all in the flux monitors' DFT normalisation (the port's
    /// series as stored in precision `T`, so a resumed run writes the same bits). Nothing
    /// without a driven lumped port, or with several (which one would the gain be of?).
    pub fn write_antenna<T: Real>(
        &mut self,
        index: usize,
        model: &Model,
        pattern: &crate::far_field::Pattern,
        radiated: &[f64],
    ) -> Result<(), super::OutputError> {
        let driven: Vec<usize> = (0..model.terminals.len())
            .filter(|&t| {
                matches!(
                    model.terminals[t].kind,
                    TerminalKind::Port {
                        source: Some(_),
                        ..
                    }
                )
            })
            .collect();
        let [t] = driven[..] else {
            return Ok(());
        };
        let terminal = &model.terminals[t];
        let set = &self.probes[model.probes.len() + t];
        let stored =
            |v: &[f64]| -> Vec<f64> { v.iter().map(|&x| T::from_f64(x).to_f64()).collect() };
        let s = terminal.spectra_at(
            &stored(&set.values[0]),
            &stored(&set.values[1]),
            model.grid.dt,
            &pattern.frequency,
        );
        let per_f = pattern.theta.len() * pattern.phi.len();
        let figure = |power: &[f64]| -> Vec<f64> {
            pattern
                .intensity
                .iter()
                .enumerate()
                .map(|(k, u)| 4.0 * std::f64::consts::PI * u / power[k / per_f])
                .collect()
        };
        let shape = [
            pattern.frequency.len(),
            pattern.theta.len(),
            pattern.phi.len(),
        ];
        let efficiency: Vec<f64> = radiated.iter().zip(&s.power).map(|(r, a)| r / a).collect();
        let grp = self.fluxes[index].group.clone();
        let path = self.path.clone();
        (|| -> hdf5::Result<()> {
            for (name, values) in [
                ("directivity", figure(radiated)),
                ("gain", figure(&s.power)),
                ("realized_gain", figure(&s.incident_power)),
            ] {
                if grp.link_exists(name) {
                    grp.unlink(name)?;
                }
                grp.new_dataset::<f64>()
                    .shape(shape)
                    .create(name)?
                    .write_raw(&values)?;
            }
            put(&grp, "radiation_efficiency", &efficiency)?;
            put(&grp, "accepted_power", &s.power)?;
            put(&grp, "incident_power", &s.incident_power)?;
            // Written again at each checkpoint and by a resumed run: replaced, not added.
            if grp.attr_names()?.iter().any(|n| n == "port") {
                grp.delete_attr("port")?;
            }
            str_attr(&grp, "port", &terminal.name)
        })()
        .map_err(super::err(&path, self.expected))
    }

    /// Write every terminal's spectra from its series so far (model order, after the probes),
    /// as the file stores them in precision `T` (so a resumed run, which reads them back,
    /// forms the same spectra as an uninterrupted one).
    pub fn write_terminal_spectra<T: Real>(
        &mut self,
        model: &Model,
    ) -> Result<(), super::OutputError> {
        let path = self.path.clone();
        let expected = self.expected;
        let first = model.probes.len();
        (|| -> hdf5::Result<()> {
            for (t, set) in model.terminals.iter().zip(&self.probes[first..]) {
                if t.frequencies.is_empty() {
                    continue;
                }
                let stored = |v: &[f64]| -> Vec<f64> {
                    v.iter().map(|&x| T::from_f64(x).to_f64()).collect()
                };
                let (v, i) = (stored(&set.values[0]), stored(&set.values[1]));
                let s = t.spectra(&v, &i, model.grid.dt);
                let grp = self.file.group(&group_path(t))?;
                let complex = |v: &[num_complex::Complex64]| -> Vec<Complex> {
                    v.iter().map(|z| Complex { r: z.re, i: z.im }).collect()
                };
                put(&grp, "frequency", &t.frequencies)?;
                put(&grp, "impedance", &complex(&s.impedance))?;
                match t.kind {
                    TerminalKind::Port { .. } => {
                        put(&grp, "S11", &complex(&s.s11))?;
                        let (a, b): (Vec<_>, Vec<_>) = s.waves.iter().map(|w| (w[0], w[1])).unzip();
                        put(&grp, "a", &complex(&a))?;
                        put(&grp, "b", &complex(&b))?;
                        put(&grp, "incident_power", &s.incident_power)?;
                        put(&grp, "accepted_power", &s.power)?;
                    }
                    TerminalKind::Element => put(&grp, "power", &s.power)?,
                }
            }
            Ok(())
        })()
        .map_err(super::err(&path, expected))
    }
}
