//! The incident power of each diffraction monitor, measured at run start on its incident
//! column ([`Model::incident_column`]) and kept in the monitor
//! ([`crate::model::Diffraction::incident`]).

use crate::backend::bloch::BlochPair;
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::decomp::split_even;
use crate::model::Model;

/// Measure the incident power of every diffraction monitor of `model` that has none yet.
/// The column is a few thousand cells: it steps on the CPU, in f64, in a fraction of the run.
pub fn prepare(model: &Model) {
    for f in &model.fluxes {
        let Some(d) = &f.diffraction else { continue };
        if d.incident.get().is_some() {
            continue;
        }
        let column = model.incident_column(f, d);
        let a = f.patches[0].axis as usize;
        let dfts = column_dfts(&column);
        // Along the wave: the column's plane counts power along +z, its normal.
        let sign = column.sources[0].travel_sign(2).unwrap_or(1.0);
        let ratio = model.column_area_ratio(&column, a);
        let power = dfts
            .first()
            .map_or_else(Vec::new, |d| d.power())
            .iter()
            .map(|p| sign * p * ratio)
            .collect();
        // The source's own field at a monitor on its side: order (0, 0) of the column's
        // plane there, at the Bloch wavevector the monitor's order (0, 0) has, along the
        // column's in-plane axes (x, y: the monitor's turned, in their order).
        let [p, q] = f.patches[0].in_plane();
        let mut k = [0.0; 2];
        k[Model::column_axis(a, p)] = d.bloch_k[0];
        k[Model::column_axis(a, q)] = d.bloch_k[1];
        let direct = match (dfts.get(1), column.fluxes.get(1)) {
            (Some(dft), Some(plane)) => (0..f.frequencies.len())
                .map(|fi| {
                    crate::diffraction::order_amplitudes(
                        &column,
                        &plane.patches[0],
                        &dft.patches[0],
                        fi,
                        k,
                    )
                })
                .collect(),
            _ => Vec::new(),
        };
        let _ = d.incident.set(crate::model::Incident { power, direct });
    }
}

/// The DFTs of `column`'s flux planes after all its steps.
fn column_dfts(column: &Model) -> Vec<crate::flux::FluxDft> {
    // On a pool of its own: every thread that steps fields flushes subnormals.
    match super::worker_pool(1) {
        Ok(pool) => pool.install(|| step_column(column)),
        Err(_) => step_column(column),
    }
}

/// [`column_dfts`] on the current thread's pool.
fn step_column(column: &Model) -> Vec<crate::flux::FluxDft> {
    fn go<B: Backend>(
        model: &Model,
        b: &mut B,
        ranges: &[crate::decomp::SlabRange],
    ) -> Vec<crate::flux::FluxDft> {
        {
            let mut s = super::Stepper::new(model, b, ranges);
            for n in 0..model.grid.steps {
                s.step();
                s.backend.accumulate_flux(n + 1, model.grid.dt);
            }
        }
        (0..model.fluxes.len())
            .filter_map(|i| b.flux_dft(i))
            .collect()
    }
    let ranges = split_even(column.grid.shape[0], 1);
    if column.boundaries.has_bloch() {
        let re = CpuBackend::<f64>::new(column, &ranges);
        let im = CpuBackend::<f64>::new(&column.imaginary_set(), &ranges);
        go(column, &mut BlochPair::new(column, re, im), &ranges)
    } else {
        go(
            column,
            &mut CpuBackend::<f64>::new(column, &ranges),
            &ranges,
        )
    }
}
