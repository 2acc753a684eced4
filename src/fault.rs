//! Test hooks: the failures and delays the test suite injects through the environment
//! (`YEE_CUDA_FAIL_AT_STEP`: a GPU that fails at a step; `YEE_RANK_FAIL_AT=RANK:STEP`: a rank
//! that fails; `YEE_TEST_CHECKPOINT_PAUSE_MS`: a slow disk under a checkpoint;
//! `YEE_LOAD_AVERAGE`: how busy the machine is to be taken as). They are read only with the
//! `fault-injection` feature, which `scripts/test.sh` and `scripts/gpu-check.sh` enable; a
//! build without it (`scripts/run-example.sh`, a user's) reads none of them.

/// The value of test hook `name`, where the `fault-injection` feature is on and it is set.
pub fn hook(name: &str) -> Option<String> {
    #[cfg(feature = "fault-injection")]
    {
        std::env::var(name).ok()
    }
    #[cfg(not(feature = "fault-injection"))]
    {
        let _ = name;
        None
    }
}

/// The cell passes a test asks for (`YEE_TEST_COUNTER_PASS=COMPONENT:x0,x1,y0,y1,z0,z1`: a
/// `CounterPass` on that box of cells), added to every model resolved from a scene: how the
/// suite runs a pass the engine does not know through the whole program (plan, ranks,
/// checkpoints). None without the `fault-injection` feature.
pub fn cell_passes() -> Vec<std::sync::Arc<dyn crate::model::CellPass>> {
    #[cfg(feature = "fault-injection")]
    if let Some(spec) = hook("YEE_TEST_COUNTER_PASS") {
        let counter = CounterPass::parse(&spec)
            .unwrap_or_else(|| panic!("YEE_TEST_COUNTER_PASS={spec}: want Ez:x0,x1,y0,y1,z0,z1"));
        return vec![std::sync::Arc::new(counter)];
    }
    Vec::new()
}

/// A toy stateful pass for tests: on each of its cells, every step, it counts the step (slot
/// 0), adds the field's square to a running sum (slot 1) and damps the field by a factor
/// `1 - 2^-10` (exact in both precisions, so the run's bits are the same however it is split).
#[cfg(feature = "fault-injection")]
#[derive(Debug, Clone)]
pub struct CounterPass {
    /// The component it acts on.
    pub component: crate::model::Component,
    /// Its cells, [start, end) along x, y, z.
    pub cells: [[usize; 2]; 3],
}

#[cfg(feature = "fault-injection")]
impl CounterPass {
    /// From `Ez:x0,x1,y0,y1,z0,z1`.
    pub fn parse(spec: &str) -> Option<CounterPass> {
        let (c, b) = spec.split_once(':')?;
        let v: Vec<usize> = b
            .split(',')
            .map(|s| s.trim().parse().ok())
            .collect::<Option<_>>()?;
        let component = crate::model::Component::parse(c.trim())?;
        (v.len() == 6).then(|| CounterPass {
            component,
            cells: [[v[0], v[1]], [v[2], v[3]], [v[4], v[5]]],
        })
    }

    fn update<T: crate::real::Real>(p: crate::model::CellPlane<'_, T>) {
        let keep = T::from_f64(1.0 - 1.0 / 1024.0);
        for y in p.rows.clone() {
            for z in p.z.clone() {
                let (f, s) = p.at(y, z);
                let v = p.field[f];
                p.state[s] += T::ONE;
                p.state[s + p.cells] += v * v;
                p.field[f] = v * keep;
            }
        }
    }
}

#[cfg(feature = "fault-injection")]
impl crate::model::CellPass for CounterPass {
    fn name(&self) -> &str {
        "counter"
    }
    fn component(&self) -> crate::model::Component {
        self.component
    }
    fn cells(&self) -> [[usize; 2]; 3] {
        self.cells
    }
    fn slots(&self) -> usize {
        2
    }
    fn update_plane(&self, plane: crate::model::CellPlaneOf<'_>) {
        match plane {
            crate::model::CellPlaneOf::F32(p) => Self::update(p),
            crate::model::CellPlaneOf::F64(p) => Self::update(p),
        }
    }
}
