//! The GPU's own time per phase of a run ([`crate::backend::Backend::device_times`]), from
//! timing marks (events with timing) recorded on every compute stream.
//!
//! Work on a GPU is queued, so the host's time around a call is that of issuing it, and the
//! device's time lands wherever the host next waits (a flux spectrum, a NaN check). The clock
//! records a mark on every compute stream when a call begins, when its work changes phase
//! within it (the interior passes an exchange launches), and when it ends. The time from one
//! mark to the next is the stream's time in the first one's phase: its kernels, and its waits
//! within the call (for a halo copy, or for the host to queue the call's next launch). From a
//! call's end to the next call's beginning the stream is idle, waiting for the host; the
//! clock counts no phase there.
//!
//! Marks are read back without waiting, once the GPU has passed them. A mark costs about a
//! microsecond of host time, so the stepping calls are timed on one step in
//! [`SAMPLE_EVERY`] and their times scaled by the calls over the calls timed; monitors and
//! checks, which are rarer, on every call. A call is not timed (and so scaled for) when the
//! GPU is so far behind that the marks it would need are still in use.

use super::device::{Device, DeviceError, MARKS};
use crate::backend::{Phase, PhaseTimes};
use std::collections::VecDeque;

/// The stepping calls (passes, exchanges, fused sweeps) are timed on the steps that are a
/// multiple of this.
pub const SAMPLE_EVERY: usize = 4;

/// The most marks one call records on a GPU: its beginning and end, and a change of phase
/// for each interior pass an exchange launches (a half step has at most a few passes).
const MARKS_PER_CALL: usize = 64;

/// The classes of calls timed at different rates, each scaled by its own calls over those
/// timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Stepping = 0,
    Monitors = 1,
    Checks = 2,
}

impl Class {
    fn of(phase: Phase) -> Class {
        match phase {
            Phase::Pass(..) | Phase::Fused | Phase::Exchange => Class::Stepping,
            Phase::Monitors | Phase::Checkpoint => Class::Monitors,
            Phase::Checks => Class::Checks,
        }
    }
}

/// A mark recorded and not yet read back: its slot, and the phase the time up to the next
/// mark is in (`None`: a call ended there, and the stream waits for the host).
#[derive(Debug, Clone, Copy)]
struct Mark {
    slot: usize,
    phase: Option<Phase>,
}

/// One GPU's marks in flight.
#[derive(Debug, Default)]
struct GpuMarks {
    pending: VecDeque<Mark>,
    next_slot: usize,
}

/// The engine's clock over its GPUs.
#[derive(Debug)]
pub struct Clock {
    /// False on a device without marks, or after a mark failed (the run goes on untimed).
    on: bool,
    gpus: Vec<GpuMarks>,
    /// A timed call is under way: its changes of phase and its end record marks.
    open: bool,
    /// Per [`Class`]: calls begun, and calls timed.
    calls: [u64; 3],
    timed: [u64; 3],
    /// Per [`Class`]: the time read back, summed over the GPUs.
    measured: [PhaseTimes; 3],
}

impl Clock {
    /// A clock over `gpus` GPUs, timing only if the device records marks.
    pub fn new(gpus: usize, has_marks: bool) -> Clock {
        Clock {
            on: has_marks,
            gpus: (0..gpus).map(|_| GpuMarks::default()).collect(),
            open: false,
            calls: [0; 3],
            timed: [0; 3],
            measured: [PhaseTimes::default(); 3],
        }
    }

    /// A call in `phase` begins, in step `step` (1-based) of the run.
    pub fn begin<D: Device>(&mut self, dev: &D, phase: Phase, step: usize) {
        if !self.on {
            return;
        }
        if self.open {
            self.end(dev);
        }
        let class = Class::of(phase);
        self.calls[class as usize] += 1;
        if class == Class::Stepping && step % SAMPLE_EVERY != 0 {
            return;
        }
        self.read_back(dev, false);
        let room = self
            .gpus
            .iter()
            .all(|g| g.pending.len() + MARKS_PER_CALL <= MARKS);
        if !self.on || !room {
            return;
        }
        self.timed[class as usize] += 1;
        self.open = true;
        self.record(dev, Some(phase));
    }

    /// The call under way goes on in `phase`.
    pub fn switch<D: Device>(&mut self, dev: &D, phase: Phase) {
        if self.on && self.open {
            self.record(dev, Some(phase));
        }
    }

    /// The call under way ends.
    pub fn end<D: Device>(&mut self, dev: &D) {
        if self.on && self.open {
            self.open = false;
            self.record(dev, None);
        }
    }

    /// The GPU time per phase so far, the time of untimed calls estimated from the timed ones
    /// of their class, averaged over the GPUs; waits for the marks still in flight. `None` on a
    /// device without marks, or if a mark failed.
    pub fn times<D: Device>(&mut self, dev: &D) -> Option<PhaseTimes> {
        self.end(dev);
        self.read_back(dev, true);
        if !self.on {
            return None;
        }
        let mut total = PhaseTimes::default();
        for class in 0..3 {
            if self.timed[class] == 0 {
                continue;
            }
            let mut t = self.measured[class];
            t.scale(self.calls[class] as f64 / self.timed[class] as f64);
            total.add(&t);
        }
        total.scale(1.0 / self.gpus.len().max(1) as f64);
        Some(total)
    }

    fn record<D: Device>(&mut self, dev: &D, phase: Option<Phase>) {
        for gpu in 0..self.gpus.len() {
            let g = &mut self.gpus[gpu];
            if g.pending.len() == MARKS {
                // A call recorded more marks than it was given room for: stop timing rather
                // than reuse a mark still to be read.
                self.stop();
                return;
            }
            let slot = g.next_slot;
            if dev.mark(gpu, slot).is_err() {
                self.stop();
                return;
            }
            g.next_slot = (slot + 1) % MARKS;
            g.pending.push_back(Mark { slot, phase });
        }
    }

    /// Add the time of every mark the GPUs have passed the next of; with `wait`, of all but
    /// the last.
    fn read_back<D: Device>(&mut self, dev: &D, wait: bool) {
        for gpu in 0..self.gpus.len() {
            if self.read_back_gpu(dev, gpu, wait).is_err() {
                self.stop();
                return;
            }
        }
    }

    fn read_back_gpu<D: Device>(
        &mut self,
        dev: &D,
        gpu: usize,
        wait: bool,
    ) -> Result<(), DeviceError> {
        let g = &mut self.gpus[gpu];
        while g.pending.len() >= 2 {
            let (a, b) = (g.pending[0], g.pending[1]);
            if !dev.mark_reached(gpu, b.slot, wait)? {
                break;
            }
            if let Some(phase) = a.phase {
                let seconds = dev.mark_seconds(gpu, a.slot, b.slot)?.max(0.0);
                *self.measured[Class::of(phase) as usize].of_mut(phase) +=
                    std::time::Duration::from_secs_f64(seconds);
            }
            g.pending.pop_front();
        }
        Ok(())
    }

    fn stop(&mut self) {
        self.on = false;
        self.open = false;
        for g in &mut self.gpus {
            g.pending.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::args::{Dims, Kernel, Ptr};
    use super::super::device::{Event, KernelArgs, Stream};
    use super::*;
    use crate::backend::{Half, Pass};
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;
    use std::time::Duration;

    /// A device whose compute streams reach each mark at a time the test sets (`now`, per
    /// GPU), and report a mark reached only once `reached` allows it.
    struct Timeline {
        gpus: usize,
        now: RefCell<Vec<f64>>,
        /// Per (GPU, slot): when the stream reached the mark, and the mark's number in the
        /// GPU's order of recording.
        at: RefCell<HashMap<(usize, usize), (f64, usize)>>,
        /// Per GPU: the number of the latest mark reported reached.
        reached: RefCell<Vec<Option<usize>>>,
        /// Marks recorded on GPU 0 that the device has not passed yet.
        behind: Cell<usize>,
        recorded: RefCell<Vec<(usize, usize)>>,
    }

    impl Timeline {
        fn new(gpus: usize) -> Timeline {
            Timeline {
                gpus,
                now: RefCell::new(vec![0.0; gpus]),
                at: RefCell::new(HashMap::new()),
                reached: RefCell::new(vec![None; gpus]),
                behind: Cell::new(0),
                recorded: RefCell::new(Vec::new()),
            }
        }
        /// The GPUs work for `seconds` each (GPU g for `seconds * (g + 1)`).
        fn work(&self, seconds: f64) {
            for (g, t) in self.now.borrow_mut().iter_mut().enumerate() {
                *t += seconds * (g + 1) as f64;
            }
        }
    }

    fn unused() -> ! {
        unreachable!("the clock only records and reads marks")
    }

    impl Device for Timeline {
        fn gpus(&self) -> usize {
            self.gpus
        }
        fn alloc(&self, _: usize, _: usize) -> Result<Ptr, DeviceError> {
            unused()
        }
        fn alloc_pinned(&self, _: usize, _: usize) -> Result<Ptr, DeviceError> {
            unused()
        }
        fn upload(&self, _: usize, _: Ptr, _: &[u8]) -> Result<(), DeviceError> {
            unused()
        }
        fn download(&self, _: usize, _: Ptr, _: &mut [u8]) -> Result<(), DeviceError> {
            unused()
        }
        fn set_constant(&self, _: usize, _: &str, _: &[u8]) -> Result<(), DeviceError> {
            unused()
        }
        unsafe fn launch<A: KernelArgs>(
            &self,
            _: usize,
            _: Stream,
            _: Kernel,
            _: Dims,
            _: &A,
        ) -> Result<(), DeviceError> {
            unused()
        }
        fn copy_dtod(
            &self,
            _: usize,
            _: Stream,
            _: (usize, Ptr),
            _: (usize, Ptr),
            _: usize,
        ) -> Result<(), DeviceError> {
            unused()
        }
        fn copy_dtoh(
            &self,
            _: usize,
            _: Stream,
            _: Ptr,
            _: Ptr,
            _: usize,
        ) -> Result<(), DeviceError> {
            unused()
        }
        fn copy_htod(
            &self,
            _: usize,
            _: Stream,
            _: Ptr,
            _: Ptr,
            _: usize,
        ) -> Result<(), DeviceError> {
            unused()
        }
        fn record(&self, _: usize, _: Stream, _: Event) -> Result<(), DeviceError> {
            unused()
        }
        fn wait(&self, _: usize, _: Stream, _: usize, _: Event) -> Result<(), DeviceError> {
            unused()
        }
        fn sync_event(&self, _: usize, _: Event) -> Result<(), DeviceError> {
            unused()
        }
        fn query(&self, _: usize, _: Event) -> Result<bool, DeviceError> {
            unused()
        }
        fn peer(&self, _: usize, _: usize) -> bool {
            unused()
        }
        fn has_marks(&self) -> bool {
            true
        }
        fn mark(&self, gpu: usize, slot: usize) -> Result<(), DeviceError> {
            let t = self.now.borrow()[gpu];
            let number = self
                .recorded
                .borrow()
                .iter()
                .filter(|(g, _)| *g == gpu)
                .count();
            let before = self.at.borrow_mut().insert((gpu, slot), (t, number));
            // A mark may be recorded again only once a later one was seen reached (then the
            // clock has read the time up to it, or needs none).
            if let Some((_, earlier)) = before {
                let reached = self.reached.borrow()[gpu];
                assert!(
                    reached.is_some_and(|r| r > earlier),
                    "mark {slot} of GPU {gpu} recorded again before the GPU was seen past it"
                );
            }
            self.recorded.borrow_mut().push((gpu, slot));
            Ok(())
        }
        fn mark_reached(&self, gpu: usize, slot: usize, wait: bool) -> Result<bool, DeviceError> {
            let number = self.at.borrow()[&(gpu, slot)].1;
            let count = self
                .recorded
                .borrow()
                .iter()
                .filter(|(g, _)| *g == gpu)
                .count();
            // GPU 0 is `behind` marks behind the last one recorded on it.
            let reached = wait || gpu > 0 || number + self.behind.get() < count;
            if reached {
                let mut r = self.reached.borrow_mut();
                r[gpu] = Some(r[gpu].map_or(number, |x| x.max(number)));
            }
            Ok(reached)
        }
        fn mark_seconds(&self, gpu: usize, from: usize, to: usize) -> Result<f64, DeviceError> {
            let at = self.at.borrow();
            let (a, b) = (at[&(gpu, from)], at[&(gpu, to)]);
            assert!(a.1 < b.1, "marks read out of order");
            Ok(b.0 - a.0)
        }
    }

    const CURL_H: Phase = Phase::Pass(Half::H, Pass::CurlCpml);
    const CURL_E: Phase = Phase::Pass(Half::E, Pass::CurlCpml);

    fn ms(d: Duration) -> f64 {
        (d.as_secs_f64() * 1e3 * 1e6).round() / 1e6
    }

    /// One step as the engine's calls: the H curl (1 ms), an exchange that launches the
    /// interior of the E curl (2 ms) and waits for the copies (0.5 ms), the GPU idle for 3 ms
    /// while the host works, and a flux sample (0.25 ms) every `every` steps.
    fn step(clock: &mut Clock, dev: &Timeline, n: usize, every: usize) {
        clock.begin(dev, CURL_H, n);
        dev.work(1e-3);
        clock.end(dev);
        clock.begin(dev, Phase::Exchange, n);
        clock.switch(dev, CURL_E);
        dev.work(2e-3);
        clock.switch(dev, Phase::Exchange);
        dev.work(0.5e-3);
        clock.end(dev);
        dev.work(3e-3);
        if n % every == 0 {
            clock.begin(dev, Phase::Monitors, n);
            dev.work(0.25e-3);
            clock.end(dev);
        }
    }

    #[test]
    fn every_phase_gets_the_gpu_time_between_its_marks_scaled_for_the_steps_not_timed() {
        let dev = Timeline::new(2);
        let mut clock = Clock::new(2, true);
        // 40 steps: 10 timed (every 4th), the flux every 5th step (8 samples, all timed).
        for n in 1..=40 {
            step(&mut clock, &dev, n, 5);
        }
        let t = clock.times(&dev).expect("times");
        // GPU 1 works twice as long as GPU 0: the mean is 1.5 times GPU 0's.
        assert_eq!(ms(t.passes[0][Pass::CurlCpml.index()]), 40.0 * 1.5);
        assert_eq!(ms(t.passes[1][Pass::CurlCpml.index()]), 80.0 * 1.5);
        assert_eq!(ms(t.exchange), 20.0 * 1.5);
        assert_eq!(ms(t.monitors), 2.0 * 1.5);
        // The GPU's idle time between calls is no phase's.
        assert_eq!(ms(t.total()), (40.0 + 80.0 + 20.0 + 2.0) * 1.5);
        // Stepping calls recorded marks on the timed steps only; the monitors on each.
        let marks = dev.recorded.borrow().len();
        assert_eq!(marks, 2 * (10 * (2 + 4) + 8 * 2));
    }

    #[test]
    fn a_gpu_behind_the_host_is_read_later_and_a_full_ring_skips_calls_not_time() {
        let dev = Timeline::new(1);
        // The GPU never catches up until the end: the ring fills, calls go untimed (and are
        // scaled for), and no mark is recorded over one not yet read.
        dev.behind.set(usize::MAX / 2);
        let mut clock = Clock::new(1, true);
        let steps = 4 * MARKS;
        for n in 1..=steps {
            step(&mut clock, &dev, n, 1);
        }
        assert!(clock.timed[Class::Monitors as usize] < steps as u64);
        let t = clock.times(&dev).expect("times");
        assert_eq!(ms(t.monitors), steps as f64 * 0.25);
        assert_eq!(ms(t.passes[0][Pass::CurlCpml.index()]), steps as f64);
        // Behind by a few marks only: everything is timed, read as the GPU passes it.
        let dev = Timeline::new(1);
        dev.behind.set(7);
        let mut clock = Clock::new(1, true);
        for n in 1..=400 {
            step(&mut clock, &dev, n, 1);
        }
        assert_eq!(clock.timed[Class::Monitors as usize], 400);
        // Read back at each timed call: what stays is the 7 marks and the pair around them,
        // and the marks of the call just made.
        assert!(clock.gpus[0].pending.len() <= 7 + 2 + 4);
        let t = clock.times(&dev).expect("times");
        assert_eq!(ms(t.exchange), 200.0);
        assert_eq!(ms(t.monitors), 100.0);
    }

    #[test]
    fn a_device_without_marks_reports_no_times() {
        let dev = Timeline::new(1);
        let mut clock = Clock::new(1, false);
        step(&mut clock, &dev, 4, 1);
        assert!(clock.times(&dev).is_none());
        assert!(dev.recorded.borrow().is_empty());
    }
}
