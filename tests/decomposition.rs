//! Decomposition must not change the answer: the same scene on 1, 2 and 3 slabs (uneven
//! sizes included) gives bit-identical probes and fields, in the fused sweep and in the
//! two-pass update alike (each split in each mode against the two-pass single slab).

mod common;

use common::*;
use yee::backend::StepMode;
use yee::decomp::SlabRange;

fn scene(x_faces: &str, precision: &str) -> String {
    format!(
        r#"
[simulation]
length_unit = "um"
cell_size = [0.05, 0.04, 0.05]
size = [1.15, 1.0, 1.2]
steps = 160
precision = "{precision}"
[boundaries]
default = {{ type = "pml", cells = 6 }}
y_max = {{ type = "pec" }}
{x_faces}
[materials]
glass = {{ epsilon = 2.25 }}
soil = {{ epsilon = 6.0, conductivity = 2.0e5 }}
[[geometry]]
shape = "box"
material = "glass"
center = [0.1, 0.0, -0.2]
size = [0.6, 0.5, 0.3]
[[geometry]]
shape = "sphere"
material = "soil"
center = [-0.2, 0.1, 0.15]
radius = 0.18
[[geometry]]
shape = "cylinder"
material = "pec"
center = [0.2, -0.2, 0.2]
radius = 0.06
height = 0.4
axis = "y"
[[source]]
type = "dipole"
component = "Ez"
position = [0.02, 0.03, 0.0]
waveform = {{ type = "gaussian", frequency = 3.0e14, bandwidth = 2.0e14 }}
[[source]]
type = "dipole"
component = "Ey"
position = [-0.05, 0.05, 0.1]
waveform = {{ type = "ricker", frequency = 2.0e14 }}
[[monitor]]
type = "probe"
name = "p"
position = [0.3, -0.1, 0.05]
components = ["Ex", "Ey", "Ez", "Hx", "Hy", "Hz"]
"#
    )
}

fn ranges(splits: &[usize], nx: usize) -> Vec<SlabRange> {
    let mut cuts = vec![0];
    cuts.extend_from_slice(splits);
    cuts.push(nx);
    cuts.windows(2)
        .map(|w| SlabRange { x0: w[0], x1: w[1] })
        .collect()
}

fn check_identical(text: &str) {
    let m = model(text);
    let nx = m.grid.shape[0];
    assert_eq!(nx, 23);
    let one = run_ranges_mode::<f64>(&m, &ranges(&[], nx), StepMode::TwoPass);
    assert!(max_abs(&one.0[2]) > 0.0, "the probe must see the source");
    // One slab, two even-ish slabs, three uneven ones, and a one-plane slab against the PML.
    for splits in [vec![], vec![11], vec![5, 16], vec![1, 2, 20]] {
        for mode in [StepMode::TwoPass, StepMode::Fused] {
            let many = run_ranges_mode::<f64>(&m, &ranges(&splits, nx), mode);
            let how = format!("slabs cut at {splits:?}, {}", mode.name());
            assert!(one.0 == many.0, "probe series differ with {how}");
            for c in 0..6 {
                assert!(one.1[c] == many.1[c], "component {c} differs with {how}");
            }
        }
    }
}

#[test]
fn slabs_give_bit_identical_fields_with_pml_dielectric_conductor_and_pec() {
    check_identical(&scene("", "f64"));
}

/// Objects thinner than a cell: a PEC sheet off the node planes (put on one), a thin slanted
/// PEC wire (a staircase of edges), a dielectric film between z planes and one across the x
/// plane where the slabs are cut at 11 (smoothed from exact chords).
const THIN_OBJECTS: &str = r#"
[[geometry]]
shape = "box"
material = "pec"
center = [0.0, -0.1, -0.33]
size = [0.6, 0.5, 0.0]
[[geometry]]
shape = "cylinder"
material = "pec"
center = [0.05, 0.1, 0.3]
radius = 0.005
height = 0.5
axis = [1.0, 0.5, 0.3]
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, 0.41]
size = [0.7, 0.6, 0.02]
[[geometry]]
shape = "box"
material = "soil"
center = [-0.03, 0.0, 0.0]
size = [0.02, 0.6, 0.6]
"#;

#[test]
fn slabs_give_bit_identical_fields_with_objects_thinner_than_a_cell() {
    check_identical(&(scene("", "f64") + THIN_OBJECTS));
}

#[test]
fn slabs_give_bit_identical_fields_with_periodic_x() {
    check_identical(&scene(
        r#"x_min = { type = "periodic" }
x_max = { type = "periodic" }"#,
        "f64",
    ));
}

#[test]
fn slabs_give_bit_identical_fields_with_pmc_and_pec_x_faces() {
    check_identical(&scene(
        r#"x_min = { type = "pmc" }
x_max = { type = "pec" }"#,
        "f64",
    ));
}

#[test]
fn slabs_give_bit_identical_fields_in_f32() {
    let m = model(&scene("", "f32"));
    let nx = m.grid.shape[0];
    let one = run_ranges_mode::<f32>(&m, &ranges(&[], nx), StepMode::TwoPass);
    for mode in [StepMode::TwoPass, StepMode::Fused] {
        let three = run_ranges_mode::<f32>(&m, &ranges(&[7, 15], nx), mode);
        assert!(one.0 == three.0 && one.1 == three.1, "{}", mode.name());
    }
}
