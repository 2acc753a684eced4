//! A step as lists of named passes.
//!
//! A leapfrog step is two half steps, H then E; each half step is the list of passes below,
//! walked in order by the time loop ([`crate::run::Stepper`]) and timed one by one in the run
//! summary. Both backends implement every pass ([`super::Backend::run_pass`]); a pass is one
//! call over every slab (on a GPU, a few kernel launches), never a call per cell.
//!
//! Within a half step a pass writes only the half's own field (and its own auxiliary arrays)
//! and reads the other field, so passes on different planes do not interact: a backend may run
//! every pass on some planes before it runs them on others (the CUDA backend updates the planes
//! a halo copy reads first, so the copies overlap the rest), as long as every plane sees the
//! passes in list order.
//!
//! The CPML correction is part of the curl pass, not a pass of its own: the CPU backend adds it
//! to each plane right after that plane's curl, while the plane is still in cache, and the
//! update is bandwidth-bound, so a separate sweep over the layers would cost a second read of
//! their fields. The CUDA backend launches the CPML kernels right after the curl kernel within
//! the same pass. Adding a pass: see `docs/architecture.md`.

/// How a step runs its passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StepMode {
    /// Both half steps in one sweep along x per slab ([`super::Backend::step_fused`]): H then
    /// E on each plane while it is in cache. The same bits as [`StepMode::TwoPass`]; on the
    /// CPU at 256^3 it moves 48 bytes per cell-step in f32 instead of 72 (the default where the
    /// engine has it; `docs/performance.md`).
    #[default]
    Fused,
    /// Each half step's pass list over every slab in turn, each pass timed: the reference.
    TwoPass,
}

impl StepMode {
    /// "fused" or "two-pass".
    pub fn name(self) -> &'static str {
        match self {
            StepMode::Fused => "fused",
            StepMode::TwoPass => "two-pass",
        }
    }
}

/// The two half steps of a leapfrog step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Half {
    /// H^{n-1/2} -> H^{n+1/2}, reading E^n.
    H = 0,
    /// E^n -> E^{n+1}, reading H^{n+1/2}.
    E = 1,
}

/// One named piece of a half step, applied to every slab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pass {
    /// The curl of the other field, with the CPML correction on the planes and rows inside a
    /// layer: H -= (dt/mu0) curl E; E = ca E + cb curl H.
    CurlCpml,
    /// Magnetic sheet sources: H -= (dt/mu0) M (H half step).
    MagneticSources,
    /// Electric current sources: E -= cb J (E half step).
    Sources,
    /// The poles of dispersive materials: E -= g (memory term), then the polarisation
    /// currents advance from E^n and the final E^{n+1} (E half step, after every additive
    /// correction of E: the pole update is implicit in E^{n+1}).
    Dispersive,
    /// Tangential E zeroed on the PEC minimum faces (E half step, last).
    PecFaces,
    /// The total-field / scattered-field correction ([`crate::operator::TfsfOp`]): the 1-D
    /// incident grid advances once, then the fields next to the box's faces get the incident
    /// term of the field their curl reads across the face. In H after the magnetic sources;
    /// in E after the sources and before the dispersive pass (an additive correction of E).
    Tfsf,
    /// The model's cell passes of the half step's components, in model order
    /// ([`crate::model::CellPass`]): physics given to the model as objects, which the engine
    /// runs, allocates and checkpoints from their declarations alone. After the additive
    /// corrections (sources, TF/SF) and before the dispersive poles.
    Cells,
    /// The conformal PEC surfaces' cut faces ([`crate::operator::ConformalOp`]): H += the
    /// Dey-Mittra update's difference from the plain curl, from the free edges and areas of
    /// the faces a PEC surface cuts (H half step, right after the curl).
    Conformal,
    /// The Bloch walls' phase ([`crate::operator::Operator::bloch`]): the curl read the
    /// neighbour beyond each Bloch-periodic face as the plain periodic image, its own set's
    /// value at the other end; the cells next to the wrap get the difference that the image's
    /// phase rotation makes, which mixes the real and imaginary field sets. Right after the
    /// curl in both half steps (an additive correction of the curl, before everything that
    /// reads the new field). It couples two engines, so the pair that steps them runs it
    /// ([`crate::backend::bloch`]); a single engine has nothing to do.
    Bloch,
}

/// The passes of the H half step, in order.
pub const H_PASSES: &[Pass] = &[
    Pass::CurlCpml,
    Pass::Bloch,
    Pass::Conformal,
    Pass::MagneticSources,
    Pass::Tfsf,
    Pass::Cells,
];

/// The passes of the E half step, in order.
pub const E_PASSES: &[Pass] = &[
    Pass::CurlCpml,
    Pass::Bloch,
    Pass::Sources,
    Pass::Tfsf,
    Pass::Cells,
    Pass::Dispersive,
    Pass::PecFaces,
];

/// Every pass, in the order of [`Pass::index`].
pub const ALL_PASSES: [Pass; 9] = [
    Pass::CurlCpml,
    Pass::MagneticSources,
    Pass::Sources,
    Pass::Dispersive,
    Pass::PecFaces,
    Pass::Tfsf,
    Pass::Cells,
    Pass::Conformal,
    Pass::Bloch,
];

impl Half {
    /// Both halves, in step order.
    pub const BOTH: [Half; 2] = [Half::H, Half::E];

    /// The passes of this half step, in order.
    pub fn passes(self) -> &'static [Pass] {
        match self {
            Half::H => H_PASSES,
            Half::E => E_PASSES,
        }
    }

    /// 0 for H, 1 for E.
    pub fn index(self) -> usize {
        self as usize
    }

    /// "H" or "E".
    pub fn name(self) -> &'static str {
        match self {
            Half::H => "H",
            Half::E => "E",
        }
    }
}

impl Pass {
    /// Position in [`ALL_PASSES`] (an index into per-pass tables such as the run's timings).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name the run summary prints.
    pub fn name(self) -> &'static str {
        match self {
            Pass::CurlCpml => "curl+cpml",
            Pass::MagneticSources => "magnetic sources",
            Pass::Sources => "sources",
            Pass::Dispersive => "dispersive",
            Pass::PecFaces => "pec faces",
            Pass::Tfsf => "tfsf",
            Pass::Cells => "cells",
            Pass::Conformal => "conformal pec",
            Pass::Bloch => "bloch",
        }
    }
}

/// The names of the state arrays the passes keep ([`super::StateArray`]), made in this one
/// place so that every backend, checkpoint and rank exchange calls an array the same: a pass
/// that keeps state adds its names here and lists its arrays in each backend's `state.rs`;
/// checkpoints, resume and MPI parts carry them without knowing what they are.
pub mod arrays {
    use crate::backend::Spread;

    /// `curl+cpml`: psi array `k` of `axis` (x: Ey, Ez, Hy, Hz; y: Ex, Ez, Hx, Hz; z: Ex, Ey,
    /// Hx, Hy), laid out x: `[x layer][ny][nz]`, y: `[nx][y layer][nz]`, z: `[nx][ny][z
    /// layer]`, per cell. The E values on the outer wall of a minimum layer (x plane 0, y row
    /// 0, z cell 0), where E is zeroed every step and which never reach a field, are 0.
    pub fn cpml_psi(axis: usize, k: usize) -> (String, Spread) {
        (
            format!("cpml.psi_{}{k}", ["x", "y", "z"][axis]),
            Spread::Cells { slots: 1 },
        )
    }

    /// `dispersive`: E at the previous step of the cells of E component `component` (0..3)
    /// made of material `material`, in global index order, per cell.
    pub fn dispersive_e_prev(component: usize, material: u8) -> (String, Spread) {
        (
            format!(
                "dispersive.{}.m{material:03}.e_prev",
                ["Ex", "Ey", "Ez"][component]
            ),
            Spread::Cells { slots: 1 },
        )
    }

    /// `dispersive`: the poles' state of those cells, `slots` values per cell (per pole in
    /// order J then P for Lorentz, J for Drude, P for Debye), `[slot][cell]`.
    pub fn dispersive_poles(component: usize, material: u8, slots: usize) -> (String, Spread) {
        (
            format!(
                "dispersive.{}.m{material:03}.poles",
                ["Ex", "Ey", "Ez"][component]
            ),
            Spread::Cells { slots },
        )
    }

    /// `dispersive`, the surface ports ([`crate::model::SurfacePorts`]) whose model is
    /// `material`: each port's output E, per port, the ports in order (a slab holds those
    /// whose own edge lies in its planes).
    pub fn port_values(material: u8) -> (String, Spread) {
        (
            format!("dispersive.ports.m{material:03}.e"),
            Spread::Cells { slots: 1 },
        )
    }

    /// `dispersive`, the surface ports of model `material`: their poles' state, `slots`
    /// values per port, `[slot][port]`.
    pub fn port_poles(material: u8, slots: usize) -> (String, Spread) {
        (
            format!("dispersive.ports.m{material:03}.poles"),
            Spread::Cells { slots },
        )
    }

    /// A cell pass's ([`crate::model::CellPass`]) state over its cells in the slab, `slots`
    /// values per cell, `[slot][cell]`, the cells in x, y, z order.
    pub fn cell_pass_state(pass: &str, slots: usize) -> (String, Spread) {
        (format!("{pass}.state"), Spread::Cells { slots })
    }

    /// `tfsf`: the 1-D incident grid's e (`k` = 0) and h (1), one copy shared by every slab
    /// that holds TF/SF points.
    pub fn tfsf_incident(k: usize) -> (String, Spread) {
        (format!("tfsf.incident_{}", ["e", "h"][k]), Spread::Shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_match_the_table() {
        for (i, p) in ALL_PASSES.iter().enumerate() {
            assert_eq!(p.index(), i);
        }
        // A pass added to a list but not to ALL_PASSES would index past the run's timings.
        for p in H_PASSES.iter().chain(E_PASSES) {
            assert_eq!(
                ALL_PASSES.get(p.index()),
                Some(p),
                "{} not in ALL_PASSES",
                p.name()
            );
        }
        // The Bloch correction completes the curl before anything reads the new field.
        assert_eq!(H_PASSES[1], Pass::Bloch);
        assert_eq!(E_PASSES[1], Pass::Bloch);
        // PEC faces come last in E: a source on the wall must not leave tangential E there.
        assert_eq!(E_PASSES.last(), Some(&Pass::PecFaces));
        // The poles advance from the final E^{n+1}: after the sources.
        let at = |p: Pass| E_PASSES.iter().position(|&q| q == p);
        assert!(at(Pass::Sources) < at(Pass::Dispersive));
        // The TF/SF correction is additive too: before the poles see E^{n+1}.
        assert!(at(Pass::Tfsf) < at(Pass::Dispersive));
        // A cell pass sees E after every additive correction, and the poles see its E.
        assert!(at(Pass::Tfsf) < at(Pass::Cells) && at(Pass::Cells) < at(Pass::Dispersive));
    }
}
