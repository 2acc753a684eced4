//! A Bloch cell: two engines of one model, the real and the imaginary field set, stepped in
//! lock step and coupled only by the Bloch pass.
//!
//! With a Bloch phase on a periodic axis the fields are complex, F = F_re + i F_im. Every
//! update is real and linear, so each part steps with the same kernels as a plain periodic
//! cell; only the image beyond a Bloch face mixes them, and [`Pass::Bloch`] corrects the
//! cells next to the faces for it ([`Backend::bloch_images`], [`Backend::bloch_correct`]).
//! Memory and time are twice those of a plain periodic cell, and only where a phase is not
//! zero: a model without one never builds a pair.
//!
//! Sources drive the real set, except an oblique plane wave's sheet, whose complex current
//! drives both ([`crate::model::Source::transverse_k`]). The pair reads probes, snapshots and
//! lumped terminals from the real set (the physical field of a real source in a cell of
//! phase 0, and the real part of the complex field otherwise); the surface DFTs are those of
//! the complex field, DFT(F_re) + i DFT(F_im), so fluxes, mode amplitudes and diffraction
//! orders are those of the complex field. A checkpoint holds both sets: the imaginary set's
//! fields and arrays are arrays named `bloch.im.*`.
//!
//! An engine that sweeps both sets together ([`Backend::has_bloch_sweep`], the CPU) steps the
//! pair in its fused sweep, plane by plane ([`Backend::bloch_fused_part`]); others step it
//! two-pass. Over MPI ranks each rank holds the pair of its part: a halo plane carries both
//! sets ([`Backend::field_sets`]) and rank 0 reads each set's flux planes
//! ([`Backend::gather_set`]).

use super::{
    Allocation, Backend, FusedPart, GatherTicket, Half, HaloCopy, HaloPlan, HaloSide, Pass,
    PhaseTimes, State, StateArray, StateError, StatePlace, StateReader, StateRequest,
};
use crate::flux::FluxDft;
use crate::model::{Component, Model, Region};
use crate::real::Real;

/// Prefix of the imaginary set's arrays in a pair's state.
pub const IMAGINARY_PREFIX: &str = "bloch.im.";

/// The two engines of a Bloch cell.
pub struct BlochPair<B: Backend> {
    re: B,
    im: B,
    /// Per model source: its current drives the imaginary set too (a phased sheet).
    phased: Vec<bool>,
    /// The imaginary set's source values of the current H and E half step.
    values_im: [Vec<f64>; 2],
    /// Each set's images of the current half step ([`Backend::bloch_images`]).
    images: [Vec<B::Real>; 2],
    /// Flux monitors in the model (each engine's state lists this many).
    fluxes: usize,
}

impl<B: Backend> BlochPair<B> {
    /// The pair of `re`, an engine of `model`, and `im`, one of
    /// [`Model::imaginary_set`] on the same split. Both must run the Bloch pass
    /// ([`Backend::has_bloch_pass`]).
    pub fn new(model: &Model, re: B, im: B) -> Self {
        assert!(
            re.has_bloch_pass() && im.has_bloch_pass(),
            "the {} engine has no Bloch pass",
            re.name()
        );
        BlochPair {
            re,
            im,
            phased: model
                .sources
                .iter()
                .map(|s| s.transverse_k.is_some())
                .collect(),
            values_im: [Vec::new(), Vec::new()],
            images: [Vec::new(), Vec::new()],
            fluxes: model.fluxes.len(),
        }
    }

    /// The real set's engine.
    pub fn real(&self) -> &B {
        &self.re
    }

    /// The imaginary set's engine.
    pub fn imaginary(&self) -> &B {
        &self.im
    }

    /// The imaginary set's values of half step `half` from the real set's `values`: the
    /// phased sources' own, zero for the others and for the TF/SF drive that follows them.
    fn imaginary_values(&mut self, half: Half, values: &[f64]) {
        let out = &mut self.values_im[half.index()];
        out.clear();
        out.extend(values.iter().enumerate().map(|(s, &v)| {
            if self.phased.get(s) == Some(&true) {
                v
            } else {
                0.0
            }
        }));
    }

    /// One part of the fused step, both sets swept together ([`Backend::bloch_fused_part`]).
    fn fused_part(&mut self, part: FusedPart, h_sources: &[HaloCopy], values: [&[f64]; 2]) {
        self.imaginary_values(Half::H, values[0]);
        self.imaginary_values(Half::E, values[1]);
        let [h, e] = &self.values_im;
        let values = [values, [&h[..], &e[..]]];
        self.re
            .bloch_fused_part(&mut self.im, part, h_sources, values);
    }

    /// The Bloch pass of half step `half` on both sets.
    fn bloch_pass(&mut self, half: Half) {
        let [a, b] = &mut self.images;
        a.clear();
        b.clear();
        self.re.bloch_images(half, a);
        self.im.bloch_images(half, b);
        self.re.bloch_correct(half, a, b, false);
        self.im.bloch_correct(half, b, a, true);
    }
}

/// The DFT of the complex field from its two parts' DFTs: (A_re + i A_im) + i (B_re + i B_im).
pub(crate) fn complex_dft(re: FluxDft, im: &FluxDft) -> FluxDft {
    let mut out = re;
    for (p, q) in out.patches.iter_mut().zip(&im.patches) {
        for k in 0..4 {
            for (a, b) in p.re[k].iter_mut().zip(&q.im[k]) {
                *a -= b;
            }
            for (a, b) in p.im[k].iter_mut().zip(&q.re[k]) {
                *a += b;
            }
        }
    }
    out
}

impl<B: Backend> Backend for BlochPair<B> {
    type Real = B::Real;

    fn begin_half(&mut self, half: Half) {
        self.re.begin_half(half);
        self.im.begin_half(half);
    }

    fn run_pass(&mut self, half: Half, pass: Pass, values: &[f64]) {
        if pass == Pass::Bloch {
            self.bloch_pass(half);
            return;
        }
        self.imaginary_values(half, values);
        self.re.run_pass(half, pass, values);
        self.im.run_pass(half, pass, &self.values_im[half.index()]);
    }

    fn has_fused_step(&self) -> bool {
        self.re.has_bloch_sweep()
    }

    fn fused_sweep_is_per_slab(&self) -> bool {
        self.re.fused_sweep_is_per_slab()
    }

    fn step_fused(&mut self, halos: &HaloPlan, magnetic: &[f64], currents: &[f64]) {
        if !self.re.has_bloch_sweep() {
            self.update_h(magnetic);
            self.exchange(&halos.after_h);
            self.update_e(currents);
            self.exchange(&halos.after_e);
            return;
        }
        // The split step's parts in the order a driver of ranks runs them.
        let all_planes = 2..usize::MAX;
        self.step_fused_h(&halos.after_h, magnetic, currents);
        self.exchange(&halos.after_h);
        self.step_fused_planes(&halos.after_h, magnetic, currents, all_planes);
        self.step_fused_first_e(currents);
        self.exchange(&halos.after_e);
    }

    fn can_step_fused_many(&self, halos: &HaloPlan) -> bool {
        self.re.has_bloch_sweep() && self.re.can_step_fused_many(halos)
    }

    fn step_fused_many(
        &mut self,
        halos: &HaloPlan,
        steps: &[(&[f64], &[f64])],
        first: usize,
        samples: &[(Component, [usize; 3])],
    ) {
        let _ = first;
        if !self.can_step_fused_many(halos) {
            return super::step_each(self, halos, steps, samples);
        }
        // Each step's imaginary values, then every step's values of both sets.
        let imaginary: Vec<[Vec<f64>; 2]> = steps
            .iter()
            .map(|&(magnetic, currents)| {
                self.imaginary_values(Half::H, magnetic);
                self.imaginary_values(Half::E, currents);
                self.values_im.clone()
            })
            .collect();
        let values: Vec<[[&[f64]; 2]; 2]> = steps
            .iter()
            .zip(&imaginary)
            .map(|(&(magnetic, currents), [h, e])| [[magnetic, currents], [&h[..], &e[..]]])
            .collect();
        // A sweep of both sets holds twice one set's planes in cache: half the steps at once
        // keep the working set of one set's sweep (192^3, 300 steps: 4.8 s in sweeps of 4
        // against 5.7 s in sweeps of 8; docs/performance.md).
        for part in values.chunks(values.len().div_ceil(2)) {
            self.re
                .bloch_fused_steps(&mut self.im, halos, part, samples);
        }
    }

    fn step_fused_h(&mut self, h_sources: &[HaloCopy], magnetic: &[f64], currents: &[f64]) {
        if !self.re.has_bloch_sweep() {
            return self.update_h(magnetic);
        }
        self.fused_part(FusedPart::Early, h_sources, [magnetic, currents]);
    }

    fn step_fused_planes(
        &mut self,
        h_sources: &[HaloCopy],
        magnetic: &[f64],
        currents: &[f64],
        planes: std::ops::Range<usize>,
    ) {
        if self.re.has_bloch_sweep() {
            let part = FusedPart::Planes(planes);
            self.fused_part(part, h_sources, [magnetic, currents]);
        }
    }

    fn step_fused_first_e(&mut self, currents: &[f64]) {
        if !self.re.has_bloch_sweep() {
            return self.update_e(currents);
        }
        self.fused_part(FusedPart::FirstE, &[], [&[], currents]);
    }

    fn exchange(&mut self, copies: &[HaloCopy]) {
        self.re.exchange(copies);
        self.im.exchange(copies);
    }

    fn link_ports(
        &mut self,
        links: &dyn Fn() -> Box<dyn super::ports::PortLinks<Self::Real>>,
    ) -> Result<(), String> {
        // Each set's ports trade on their own, the real set's first (as they step).
        self.re.link_ports(links)?;
        self.im.link_ports(links)
    }

    fn x_planes(&self) -> std::ops::Range<usize> {
        self.re.x_planes()
    }

    fn field_sets(&self) -> usize {
        2
    }

    fn read_plane(&mut self, component: Component, slab: usize, x: usize, out: &mut [B::Real]) {
        let (re, im) = out.split_at_mut(out.len() / 2);
        self.re.read_plane(component, slab, x, re);
        self.im.read_plane(component, slab, x, im);
    }

    fn write_halo(&mut self, component: Component, slab: usize, side: HaloSide, data: &[B::Real]) {
        let (re, im) = data.split_at(data.len() / 2);
        self.re.write_halo(component, slab, side, re);
        self.im.write_halo(component, slab, side, im);
    }

    fn sample(&self, component: Component, index: [usize; 3]) -> f64 {
        self.re.sample(component, index)
    }

    fn gather(&self, component: Component, region: &Region, out: &mut [B::Real]) {
        self.re.gather(component, region, out);
    }

    fn gather_set(&self, set: usize, component: Component, region: &Region, out: &mut [B::Real]) {
        match set {
            0 => self.re.gather(component, region, out),
            _ => self.im.gather(component, region, out),
        }
    }

    fn queue_probes(&mut self, samples: &[(Component, [usize; 3])]) {
        self.re.queue_probes(samples);
    }

    fn drain_probes(&mut self, out: &mut Vec<f64>, wait: bool) {
        self.re.drain_probes(out, wait);
    }

    fn queue_gather(&mut self, component: Component, region: &Region) -> GatherTicket {
        self.re.queue_gather(component, region)
    }

    fn gather_ready(&self, ticket: &GatherTicket) -> bool {
        self.re.gather_ready(ticket)
    }

    fn take_gather(&mut self, ticket: GatherTicket) -> Option<&[B::Real]> {
        self.re.take_gather(ticket)
    }

    fn accumulate_flux(&mut self, step: usize, dt: f64) {
        self.re.accumulate_flux(step, dt);
        self.im.accumulate_flux(step, dt);
    }

    fn flux_dft(&mut self, index: usize) -> Option<FluxDft> {
        let re = self.re.flux_dft(index)?;
        let im = self.im.flux_dft(index)?;
        Some(complex_dft(re, &im))
    }

    fn flux_power(&mut self, index: usize) -> Option<Vec<f64>> {
        self.flux_dft(index).map(|d| d.power())
    }

    fn all_finite(&self) -> bool {
        self.re.all_finite() && self.im.all_finite()
    }

    fn device_times(&mut self) -> Option<PhaseTimes> {
        self.re.device_times()
    }

    fn failure(&self) -> Option<String> {
        self.re.failure().or_else(|| self.im.failure())
    }

    fn allocation(&self) -> Allocation {
        let mut a = self.re.allocation();
        a.add(&self.im.allocation());
        a
    }

    fn host_monitor_bytes(&self, model: &Model) -> u64 {
        // The imaginary set's monitors are its flux DFTs alone (nothing else reads it).
        self.re.host_monitor_bytes(model) + self.im.flux_host_bytes(model)
    }

    fn name(&self) -> String {
        self.re.name()
    }

    fn export_state(&mut self) -> Option<State<B::Real>> {
        let mut state = self.re.export_state()?;
        let im = self.im.export_state()?;
        for (c, values) in im.fields.into_iter().enumerate() {
            state.arrays.push(StateArray {
                name: format!("{IMAGINARY_PREFIX}{}", Component::ALL[c].name()),
                spread: super::Spread::Cells { slots: 1 },
                values,
            });
        }
        for a in im.arrays {
            state.arrays.push(StateArray {
                name: format!("{IMAGINARY_PREFIX}{}", a.name),
                ..a
            });
        }
        state.arrays.sort_by(|a, b| a.name.cmp(&b.name));
        state.flux.extend(im.flux);
        Some(state)
    }

    fn import_state_from(
        &mut self,
        read: &StateReader<'_, B::Real>,
        halo_copies: &[HaloCopy],
    ) -> Result<(), String> {
        // Its own part, whole: its planes and its arrays (each counted from 0, as one rank's
        // part; the driver of ranks moves them to where the part lies), then the surface
        // DFTs on their own, as a request for them asks nothing else.
        let shape = self
            .state_shape()
            .ok_or("the Bloch pair has no state to replace")?;
        let x = self.x_planes();
        let place = StatePlace {
            x0: x.start,
            offsets: vec![0; shape.arrays.len()],
        };
        let mut state = read(Some(&place.request(x, &shape, &shape, false)))?;
        state.flux = read(Some(&StateRequest::surface_dfts()))?.flux;
        self.import_state(&state, halo_copies)
            .map_err(|e| e.to_string())
    }

    fn import_state(
        &mut self,
        state: &State<B::Real>,
        halo_copies: &[HaloCopy],
    ) -> Result<(), StateError> {
        let (re, im) = split_state(state, self.fluxes)?;
        self.re.import_state(&re, halo_copies)?;
        self.im.import_state(&im, halo_copies)
    }
}

/// A pair's state ([`BlochPair::export_state`]) as the real and the imaginary set's, with
/// `fluxes` flux monitors in each.
fn split_state<T: Real>(
    state: &State<T>,
    fluxes: usize,
) -> Result<(State<T>, State<T>), StateError> {
    let missing = |what: &str| {
        StateError(format!(
            "the saved state has no {what} of a Bloch cell's imaginary field set"
        ))
    };
    let mut re = State {
        step: state.step,
        fields: state.fields.clone(),
        arrays: Vec::new(),
        flux: Vec::new(),
    };
    let mut im = State {
        step: state.step,
        ..State::default()
    };
    for a in &state.arrays {
        match a.name.strip_prefix(IMAGINARY_PREFIX) {
            Some(name) => match Component::ALL.iter().position(|c| c.name() == name) {
                Some(c) => im.fields[c] = a.values.clone(),
                None => im.arrays.push(StateArray {
                    name: name.to_string(),
                    ..a.clone()
                }),
            },
            None => re.arrays.push(a.clone()),
        }
    }
    if im.fields.iter().any(|f| f.len() != re.fields[0].len()) {
        return Err(missing("fields"));
    }
    if state.flux.len() != 2 * fluxes {
        return Err(missing("flux DFTs"));
    }
    re.flux = state.flux[..fluxes].to_vec();
    im.flux = state.flux[fluxes..].to_vec();
    Ok((re, im))
}
