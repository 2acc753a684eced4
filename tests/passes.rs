//! A step is the lists of passes: the time loop's walk over them runs and times every listed
//! pass in order, and gives the same fields, bit for bit, as the backend's own half-step
//! methods (which walk the same lists).

mod common;

use common::*;
use yee::backend::cpu::CpuBackend;
use yee::backend::pass::{E_PASSES, H_PASSES};
use yee::backend::{Backend, Half, StepMode};
use yee::decomp::{split_even, HaloPlan};
use yee::model::{Component, Precision};
use yee::run::{magnetic_source_values, source_values, PhaseTimes, Stepper};

#[test]
fn the_stepper_times_every_listed_pass_and_matches_the_half_step_methods() {
    // The benchmark cube: CPML on every face and a dipole, so the curl, CPML, source and PEC
    // code all run; 2 slabs so halos are exchanged.
    let model = yee::bench::vacuum_cube(24, Precision::F64, 12).expect("bench scene");
    let ranges = split_even(model.grid.shape[0], 2);

    let mut walked = CpuBackend::<f64>::new(&model, &ranges);
    let mut phases = PhaseTimes::default();
    {
        let mut s = Stepper::new(&model, &mut walked, &ranges).with_mode(StepMode::TwoPass);
        for _ in 0..model.grid.steps {
            s.step_timed(&mut phases);
        }
    }

    // The summary lists exactly the passes of both lists, H first, in list order.
    let listed: Vec<_> = phases.each_pass().map(|(h, p, _)| (h, p)).collect();
    let expected: Vec<_> = H_PASSES
        .iter()
        .map(|&p| (Half::H, p))
        .chain(E_PASSES.iter().map(|&p| (Half::E, p)))
        .collect();
    assert_eq!(listed, expected);
    // The curl passes sweep 24^3 cells 12 times: a loop that skipped timing them (or
    // running them) would leave zero here.
    for h in Half::BOTH {
        assert!(phases.half(h).as_nanos() > 0, "{} passes untimed", h.name());
    }
    assert!(
        phases.fused.is_zero(),
        "a two-pass step timed a fused sweep"
    );

    // The fused step times its sweep as one phase, and no pass on its own.
    let mut swept = CpuBackend::<f64>::new(&model, &ranges);
    let mut fused_phases = PhaseTimes::default();
    {
        let mut s = Stepper::new(&model, &mut swept, &ranges).with_mode(StepMode::Fused);
        for _ in 0..model.grid.steps {
            s.step_timed(&mut fused_phases);
        }
    }
    assert!(fused_phases.fused.as_nanos() > 0, "the fused sweep untimed");
    for h in Half::BOTH {
        assert!(
            fused_phases.half(h).is_zero(),
            "a fused step timed {} passes",
            h.name()
        );
    }

    // The same steps through update_h / update_e and the halo plan, as the benchmarks do.
    let mut direct = CpuBackend::<f64>::new(&model, &ranges);
    let halos = HaloPlan::new(&ranges, &model.boundaries);
    let (mut m, mut j) = (Vec::new(), Vec::new());
    for n in 0..model.grid.steps {
        magnetic_source_values(&model, n as f64 * model.grid.dt, &mut m);
        direct.update_h(&m);
        direct.exchange(&halos.after_h);
        source_values(&model, (n as f64 + 0.5) * model.grid.dt, &mut j);
        direct.update_e(&j);
        direct.exchange(&halos.after_e);
    }
    for c in Component::ALL {
        let (a, b) = (field(&walked, &model, c), field(&direct, &model, c));
        assert!(
            a.iter().any(|v| *v != 0.0),
            "{c:?} stayed zero: the dipole never ran"
        );
        assert!(
            a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{c:?} differs between the pass walk and the half-step methods"
        );
        let f = field(&swept, &model, c);
        assert!(
            a.iter().zip(&f).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{c:?} differs between the pass walk and the fused sweep"
        );
    }
}
