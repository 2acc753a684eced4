//! A scan (B-scan): the same model run for N traces, with some sources and probes moved by a
//! fixed step from one trace to the next (gprMax's `#src_steps` / `#rx_steps`).
//!
//! Only sources and probes move; the grid, the materials, the geometry, the boundaries and
//! every other monitor are those of the base model and are shared by all traces. The scene
//! resolver places each trace's moved sources and probes with the same code that places a
//! written position (`scene::resolve`), so trace k's model is, field for field, the model of a
//! scene whose moving entries are written at `position + k * scan_step`: running it gives that
//! scene's run bit for bit.

use super::monitors::Probe;
use super::sources::Source;
use super::Model;

/// The traces of a scan, each one's sources and probes already placed on the grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    /// Number of traces (>= 1).
    pub traces: usize,
    /// Per trace, every source of the model (moving or not), in model order; trace 0's are the
    /// base model's.
    pub sources: Vec<Vec<Source>>,
    /// Per trace, every probe of the model, in model order; trace 0's are the base model's.
    pub probes: Vec<Vec<Probe>>,
    /// Per model source: its step from one trace to the next (m), None for one that stays.
    pub source_steps: Vec<Option<[f64; 3]>>,
    /// Per model probe: its step from one trace to the next (m), None for one that stays.
    pub probe_steps: Vec<Option<[f64; 3]>>,
}

impl Scan {
    /// The model of trace `k` (0-based, below [`Scan::traces`]): `base` with trace k's sources
    /// and probes and no scan of its own. Everything else is shared with `base` (cloned, never
    /// resolved again), so the traces differ only where sources and probes sit.
    pub fn trace(&self, base: &Model, k: usize) -> Model {
        assert!(k < self.traces, "trace {k} of a {}-trace scan", self.traces);
        // The scan is behind an Arc, so this clone is of the base model alone.
        Model {
            sources: self.sources[k].clone(),
            probes: self.probes[k].clone(),
            scan: None,
            sparameters: None,
            ..base.clone()
        }
    }

    /// Where probe `i` (model order) is in each trace: one requested position (m) per trace.
    pub fn probe_positions(&self, i: usize) -> Vec<[f64; 3]> {
        self.probes.iter().map(|p| p[i].position).collect()
    }

    /// True when some source or probe moves from one trace to the next.
    pub fn moves(&self) -> bool {
        self.source_steps
            .iter()
            .chain(&self.probe_steps)
            .any(|s| s.is_some_and(|v| v.iter().any(|&x| x != 0.0)))
    }
}
