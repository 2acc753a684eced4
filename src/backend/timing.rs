//! Time per phase of a run: on the host around each call the time loop makes, or, for an
//! engine whose work runs asynchronously on a device, on the device itself
//! ([`super::Backend::device_times`]).

use super::pass::{Half, Pass, ALL_PASSES};
use std::time::Duration;

/// Time spent in each phase of the loop.
///
/// The time loop's own times are the host's. On a GPU the passes and exchanges are queued,
/// not waited for, so those times are of issuing the launches, and the device's time shows
/// where the host waits for it (monitors, checks); the engine's [`super::Backend::device_times`]
/// are the device's own, in the same form.
#[derive(Debug, Clone, Copy, Default)]
pub struct PhaseTimes {
    /// Per half step ([`Half::index`]) and pass ([`Pass::index`]): the pass over every slab.
    pub passes: [[Duration; ALL_PASSES.len()]; 2],
    /// Fused sweeps ([`super::StepMode::Fused`]): both half steps' passes and halo copies
    /// together.
    pub fused: Duration,
    /// Halo exchanges.
    pub exchange: Duration,
    /// Probes, snapshots, flux DFTs and file writes.
    pub monitors: Duration,
    /// NaN/Inf checks.
    pub checks: Duration,
    /// Writing checkpoints (draining the monitors, flushing the result, reading the state
    /// and writing the checkpoint file).
    pub checkpoint: Duration,
}

/// One phase of [`PhaseTimes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// A pass of a half step.
    Pass(Half, Pass),
    /// A fused sweep.
    Fused,
    /// A halo exchange.
    Exchange,
    /// Monitors.
    Monitors,
    /// NaN/Inf checks.
    Checks,
    /// Checkpoints.
    Checkpoint,
}

impl PhaseTimes {
    /// Time of half step `half`'s passes (halo exchanges not included).
    pub fn half(&self, half: Half) -> Duration {
        self.passes[half.index()].iter().sum()
    }

    /// Time of each pass in step order: (half, pass, time).
    pub fn each_pass(&self) -> impl Iterator<Item = (Half, Pass, Duration)> + '_ {
        Half::BOTH.into_iter().flat_map(move |h| {
            h.passes()
                .iter()
                .map(move |&p| (h, p, self.passes[h.index()][p.index()]))
        })
    }

    /// The time of `phase`, to add to.
    pub fn of_mut(&mut self, phase: Phase) -> &mut Duration {
        match phase {
            Phase::Pass(h, p) => &mut self.passes[h.index()][p.index()],
            Phase::Fused => &mut self.fused,
            Phase::Exchange => &mut self.exchange,
            Phase::Monitors => &mut self.monitors,
            Phase::Checks => &mut self.checks,
            Phase::Checkpoint => &mut self.checkpoint,
        }
    }

    /// Every phase's time: the passes in [`ALL_PASSES`] order within each half, then the rest.
    fn all_mut(&mut self) -> impl Iterator<Item = &mut Duration> {
        let [h, e] = &mut self.passes;
        h.iter_mut().chain(e.iter_mut()).chain([
            &mut self.fused,
            &mut self.exchange,
            &mut self.monitors,
            &mut self.checks,
            &mut self.checkpoint,
        ])
    }

    /// Add `other`'s time to each phase.
    pub fn add(&mut self, other: &PhaseTimes) {
        let mut other = *other;
        for (a, b) in self.all_mut().zip(other.all_mut()) {
            *a += *b;
        }
    }

    /// Every phase's time times `factor`.
    pub fn scale(&mut self, factor: f64) {
        for d in self.all_mut() {
            *d = d.mul_f64(factor);
        }
    }

    /// The sum of every phase's time.
    pub fn total(&self) -> Duration {
        let mut copy = *self;
        copy.all_mut().map(|d| *d).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_scale_and_total_cover_every_phase() {
        let mut p = PhaseTimes::default();
        let phases = Half::BOTH
            .into_iter()
            .flat_map(|h| ALL_PASSES.into_iter().map(move |p| Phase::Pass(h, p)))
            .chain([
                Phase::Fused,
                Phase::Exchange,
                Phase::Monitors,
                Phase::Checks,
                Phase::Checkpoint,
            ]);
        let mut n = 0;
        for (i, phase) in phases.enumerate() {
            *p.of_mut(phase) += Duration::from_millis(i as u64 + 1);
            n = i + 1;
        }
        let sum: u64 = (1..=n as u64).sum();
        assert_eq!(p.total(), Duration::from_millis(sum));
        let mut q = p;
        q.add(&p);
        assert_eq!(q.total(), Duration::from_millis(2 * sum));
        q.scale(0.25);
        assert_eq!(q.total(), Duration::from_millis(sum).mul_f64(0.5));
        assert_eq!(q.monitors, p.monitors.mul_f64(0.5));
    }
}
