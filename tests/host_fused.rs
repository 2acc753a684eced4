//! The CUDA engine's fused update (kernels/fused.cu) compiled as C++ on the host and driven by
//! the engine itself (as tests/host_kernels.rs does for the two-pass kernels): every field,
//! probe, snapshot and flux spectrum equals the CPU backend's two-pass run bit for bit, on 1
//! and 3 slabs, on one emulated GPU and across GPUs (peer copies and staged through pinned
//! memory), in f32 and f64, on scenes with CPML on every axis, dielectrics, conductors, PEC,
//! PMC mirrors, periodic faces, dispersive and magnetic materials, graded meshes and a flat
//! grid, TF/SF boxes and one-way plane waves (the H corrections and magnetic sheets the kernel
//! applies to every new H it computes). Fused and two-pass steps mixed in one run give the
//! same bits too, and a model the fused update does not step (more magnetic sheets than its
//! launch takes) falls back to the two-pass step.

mod cuda_support;

use cuda_support::host::*;
use cuda_support::*;
use yee::backend::cuda::args::strip_for;
use yee::backend::cuda::engine::{estimate, estimate_fused};
use yee::backend::cuda::{fused_update_applies, Engine, EngineOptions};
use yee::backend::{Backend, Half};
use yee::decomp::split_even;
use yee::model::{Model, Precision};
use yee::real::Real;

/// Where the slabs sit and how the halos travel.
#[derive(Debug, Clone, Copy)]
struct Place {
    slabs: usize,
    gpus: usize,
    peer: bool,
    staged: bool,
    /// Launches run their blocks and threads in reverse order ([`host_kernels_reversed`]).
    reversed: bool,
    /// Threads along y of the fused update's blocks (1: 1-D blocks).
    tile: u32,
    /// Y rows per thread of the column kernel (1, 2 or 4).
    strip: u32,
    /// Every fused launch takes `update_fused_sources`.
    sources: bool,
}

const ONE: Place = Place {
    slabs: 1,
    gpus: 1,
    peer: false,
    staged: false,
    reversed: false,
    tile: 1,
    strip: 1,
    sources: false,
};
const THREE: Place = Place {
    slabs: 3,
    gpus: 1,
    peer: false,
    staged: false,
    reversed: false,
    tile: 1,
    strip: 1,
    sources: false,
};
const ACROSS_PEER: Place = Place {
    slabs: 3,
    gpus: 3,
    peer: true,
    staged: false,
    reversed: false,
    tile: 1,
    strip: 1,
    sources: false,
};
const ACROSS_STAGED: Place = Place {
    slabs: 4,
    gpus: 2,
    peer: false,
    staged: true,
    reversed: false,
    tile: 1,
    strip: 1,
    sources: false,
};

/// The host engine's trace of `model` with the fused update, stepped as `stepping` says, and
/// the launches it made.
fn fused_trace<T: Real>(model: &Model, at: Place, stepping: Stepping) -> (Trace, Log) {
    let ranges = split_even(model.grid.shape[0], at.slabs);
    let gpu_of: Vec<usize> = (0..ranges.len())
        .map(|s| s * at.gpus / ranges.len())
        .collect();
    let kernels = if at.reversed {
        host_kernels_reversed(T::PRECISION)
    } else {
        host_kernels(T::PRECISION)
    };
    let dev = HostDevice::with_kernels(kernels, at.gpus, at.peer);
    let mut b = Engine::<HostDevice, T>::new(
        dev,
        model,
        &ranges,
        &gpu_of,
        EngineOptions {
            staged_halos: at.staged,
            fused: true,
        },
        "host",
    )
    .expect("host engine");
    b.set_fused_tile(at.tile);
    b.set_fused_strip(at.strip);
    b.set_fused_sources_kernel(at.sources);
    let t = std::mem::size_of::<T>();
    assert_eq!(b.has_fused_step(), fused_update_applies(model));
    assert_eq!(
        b.allocation(),
        estimate_fused(model, &ranges, t, true),
        "the fused engine allocates what estimate_fused() says"
    );
    if fused_update_applies(model) {
        // The second set of fields and H psi arrays, and the probes' second address array.
        let two = estimate(model, &ranges, t);
        let f = b.allocation();
        assert_eq!(f.fields, 2 * two.fields);
        assert_eq!(f.halos, 2 * two.halos);
        assert!(f.pml > two.pml || two.pml == 0);
    }
    let trace = drive_stepping(model, &mut b, &ranges, Reads::Queued, stepping);
    // The device's time: a fused step timed whole, not by the passes and exchanges it runs.
    let times = b
        .device_times()
        .expect("the host device records timing marks");
    let passes = times.half(Half::H) + times.half(Half::E) + times.exchange;
    match stepping {
        Stepping::Fused if fused_update_applies(model) => {
            assert!(!times.fused.is_zero() && passes.is_zero(), "{times:?}")
        }
        Stepping::Fused | Stepping::TwoPass => {
            assert!(times.fused.is_zero() && !passes.is_zero(), "{times:?}")
        }
        Stepping::Alternating => assert!(!passes.is_zero(), "{times:?}"),
    }
    let log = b.device().log.borrow().clone();
    (trace, log)
}

/// Compare the fused engine with the CPU's two-pass run of `scene`, in both precisions, at
/// each place in `places`; returns the launches of the last run.
fn compare(scene: &str, steps: usize, places: &[Place], stepping: Stepping) -> Log {
    let mut last = Log::default();
    for &at in places {
        for p in [Precision::F32, Precision::F64] {
            let _guard = serial();
            let m = model(scene, p.name(), steps);
            let what = format!("{} {} {at:?} {stepping:?}", m.name, p.name());
            let (got, want, log) = match p {
                Precision::F32 => {
                    let (g, l) = fused_trace::<f32>(&m, at, stepping);
                    (g, cpu_trace::<f32>(&m), l)
                }
                Precision::F64 => {
                    let (g, l) = fused_trace::<f64>(&m, at, stepping);
                    (g, cpu_trace::<f64>(&m), l)
                }
            };
            assert_identical(&got, &want, &what);
            if fused_update_applies(&m) {
                let count = |k: &str| log.launches.get(k).copied().unwrap_or(0);
                let tiled = count("update_fused_tiled");
                let strips = count("update_fused_strip2") + count("update_fused_strip4");
                let sources = count("update_fused_sources");
                let fused = count("update_fused") + tiled + strips + sources;
                // 2-D blocks take every E launch; the column kernel the H-only planes.
                assert_eq!(tiled > 0, at.tile > 1, "{what}: {tiled} tiled launches");
                // So do strips of rows, of the most rows that divide the grid's.
                let (rows, kernel) = strip_for(at.strip, m.grid.shape[1]);
                if at.tile == 1 && rows > 1 {
                    assert!(count(kernel.name()) > 0, "{what}: no {}", kernel.name());
                } else {
                    assert_eq!(strips, 0, "{what}: {strips} strip launches");
                }
                let two_pass_e = log.launches.get("update_e").copied().unwrap_or(0);
                match stepping {
                    Stepping::Fused => {
                        assert!(fused >= steps, "{what}: {fused} fused launches");
                        assert_eq!(two_pass_e, 0, "{what}: no two-pass E update");
                    }
                    _ => assert!(fused > 0 && two_pass_e > 0, "{what}: both updates ran"),
                }
            }
            last = log;
        }
    }
    last
}

#[test]
fn fused_update_matches_cpu_with_pml_dielectric_conductor_pec_and_dipole() {
    let log = compare(PML_SCENE, 30, &[ONE, THREE], Stepping::Fused);
    // Three slabs: the H planes the copies read get an H-only launch each step before the
    // copies; the other launches cover the E boundary planes and the interior.
    assert_eq!(
        log.local_copies,
        8 * 30,
        "Hy, Hz and Ey, Ez at two slab boundaries"
    );
}

#[test]
fn fused_update_matches_cpu_with_blocks_and_threads_run_in_reverse_order() {
    // Each thread computes its neighbours' new H from the old fields: no result depends on
    // the order threads run in (the forward order alone would hide a read of a value another
    // thread wrote earlier in the same launch).
    let reversed = |p: Place| Place {
        reversed: true,
        ..p
    };
    compare(
        PML_SCENE,
        24,
        &[reversed(ONE), reversed(THREE)],
        Stepping::Fused,
    );
    compare(MATERIALS_SCENE, 24, &[reversed(THREE)], Stepping::Fused);
}

#[test]
fn fused_update_in_two_dimensional_blocks_matches_cpu_in_both_orders() {
    // 32 z by 4 or 8 y columns per block: the grids' 20-cell z rows and 22-cell y columns
    // leave partial blocks on both axes.
    for tile in [4, 8] {
        for reversed in [false, true] {
            let at = |p: Place| Place {
                tile,
                reversed,
                ..p
            };
            compare(PML_SCENE, 20, &[at(ONE), at(THREE)], Stepping::Fused);
        }
    }
    // More than one block across z (70 and 40 columns: 32 + 32 + 6, 32 + 8): the column
    // before a block is inside the grid, or at a periodic z minimum the last column, which
    // another block holds.
    let wide = PML_SCENE.replace("size = [26.0, 22.0, 20.0]", "size = [26.0, 22.0, 70.0]");
    let wide_wrapped = PMC_SCENE.replace("size = [21.0, 16.0, 14.4]", "size = [21.0, 16.0, 48.0]");
    assert_eq!(model(&wide, "f32", 1).grid.shape[2], 70);
    assert_eq!(model(&wide_wrapped, "f32", 1).grid.shape[2], 40);
    for scene in [&wide, &wide_wrapped] {
        for reversed in [false, true] {
            let at = |p: Place| Place {
                tile: 4,
                reversed,
                ..p
            };
            compare(scene, 12, &[at(ONE), at(THREE)], Stepping::Fused);
        }
    }
    // Mirrored and wrapped y and z neighbours at the blocks on the faces.
    for scene in [PMC_SCENE, &periodic_dipole_scene()] {
        for reversed in [false, true] {
            let at = |p: Place| Place {
                tile: 8,
                reversed,
                ..p
            };
            compare(scene, 20, &[at(ONE), at(THREE)], Stepping::Fused);
        }
    }
}

#[test]
fn fused_update_with_strips_of_rows_per_thread_matches_cpu_in_both_orders() {
    // Two and four y rows per thread (update_fused_strip2, update_fused_strip4), each thread
    // carrying a row's new H to the row above. The PML scene's 22 rows take two rows for
    // both (four do not divide 22); the PMC scene (20 rows, a mirrored y minimum face), the
    // periodic one (12 rows, wrapped) and the materials one (20 rows, dispersive and
    // magnetic) take four.
    for reversed in [false, true] {
        let at = |strip: u32, p: Place| Place {
            strip,
            reversed,
            ..p
        };
        compare(PML_SCENE, 20, &[at(2, ONE), at(4, THREE)], Stepping::Fused);
        for scene in [PMC_SCENE, MATERIALS_SCENE, &periodic_dipole_scene()] {
            compare(scene, 20, &[at(4, ONE), at(4, THREE)], Stepping::Fused);
        }
    }
}

#[test]
fn fused_update_with_the_sources_kernel_everywhere_matches_cpu_in_both_orders() {
    // update_fused_sources on slabs without sheets or TF/SF faces (the tuning switch
    // YEE_CUDA_FUSED_SOURCES): its empty tables leave the plain kernel's arithmetic.
    for reversed in [false, true] {
        let at = |p: Place| Place {
            sources: true,
            reversed,
            ..p
        };
        for scene in [PML_SCENE, MATERIALS_SCENE, PMC_SCENE] {
            let log = compare(scene, 20, &[at(ONE), at(THREE)], Stepping::Fused);
            assert_eq!(log.launches.get("update_fused"), None);
            assert!(log.launches["update_fused_sources"] >= 20);
        }
    }
}

#[test]
fn fused_update_matches_cpu_across_gpus_peer_and_staged() {
    compare(
        PML_SCENE,
        24,
        &[ACROSS_PEER, ACROSS_STAGED],
        Stepping::Fused,
    );
}

#[test]
fn fused_and_two_pass_steps_mixed_in_one_run_match_cpu() {
    compare(PML_SCENE, 24, &[ONE, THREE], Stepping::Alternating);
}

/// [`PERIODIC_SCENE`] (periodic x and y, a PMC z minimum) without its one-way plane wave,
/// whose magnetic sheet crosses every slab and so takes them all to `update_fused_sources`
/// (one thread per column): the dipole alone drives it, and the other kernels run.
fn periodic_dipole_scene() -> String {
    let start = PERIODIC_SCENE
        .find("[[source]]\ntype = \"plane_wave\"")
        .expect("the plane wave");
    let end = start + PERIODIC_SCENE[start..].find("\n\n").expect("its end") + 2;
    let scene = format!("{}{}", &PERIODIC_SCENE[..start], &PERIODIC_SCENE[end..]);
    assert!(fused_update_applies(&model(&scene, "f32", 1)));
    scene
}

#[test]
fn fused_update_matches_cpu_with_pmc_mirrors_periodic_faces_and_a_flux_plane() {
    for scene in [PMC_SCENE, BOX_SCENE, FLUX_SCENE, &periodic_dipole_scene()] {
        compare(scene, 30, &[ONE, THREE], Stepping::Fused);
    }
}

#[test]
fn fused_update_matches_cpu_with_dispersive_and_magnetic_materials() {
    let m = model(MATERIALS_SCENE, "f32", 1);
    assert!(m.materials.any_dispersive() && m.materials.any_magnetic());
    compare(MATERIALS_SCENE, 40, &[ONE, THREE], Stepping::Fused);
}

#[test]
fn fused_update_matches_cpu_on_a_graded_mesh_with_a_drude_sphere() {
    let scene = graded_pml_scene();
    let m = model(&scene, "f32", 1);
    assert!(!m.grid.is_uniform(), "a graded mesh");
    compare(&scene, 30, &[ONE, THREE], Stepping::Fused);
}

#[test]
fn fused_update_matches_cpu_with_one_way_plane_waves_and_their_magnetic_sheets() {
    // The periodic scene's plane wave along z (a magnetic sheet on a z plane of every slab)
    // and one along x (its sheet on one x plane, a slab face between it and its electric
    // sheet with three slabs): each new H the kernel computes, its own and its neighbours',
    // gets the sheet's term. Dipoles beside the x wave give every component a value.
    let x_wave = format!(
        r#"{X_PLANE_WAVE}
[[source]]
type = "dipole"
component = "Ex"
position = [-3.0, 1.0, -1.0]
waveform = {{ type = "ricker", frequency = 2.5e10 }}

[[source]]
type = "dipole"
component = "Ez"
position = [2.0, -2.0, 1.0]
waveform = {{ type = "ricker", frequency = 2.0e10 }}
"#
    );
    for scene in [PERIODIC_SCENE, &x_wave] {
        let m = model(scene, "f32", 1);
        assert!(m.sources.iter().any(|s| s.magnetic.is_some()));
        assert!(fused_update_applies(&m));
        let log = compare(scene, 30, &[ONE, THREE], Stepping::Fused);
        assert!(log.launches["update_fused_sources"] >= 30);
    }
    compare(PERIODIC_SCENE, 20, &[ACROSS_STAGED], Stepping::Alternating);
}

#[test]
fn fused_update_matches_cpu_with_tfsf_boxes_axial_and_oblique() {
    // The box spans x nodes 6..18 of 24: with three slabs its x faces lie in the first and
    // last slab and its y and z faces cross all three. A Drude-Lorentz sphere and a magnetic
    // box inside scatter (the H corrections take the H material's cb); the probe outside the
    // box sees only what the corrections let through.
    for (dir, pol) in [
        ("\"+x\"", "\"Ez\""),
        ("\"-y\"", "\"Ex\""),
        ("[1.0, 2.0, 3.0]", "[-2.0, 1.0, 0.0]"),
    ] {
        let scene = TFSF_SCENE
            .replace("DIRECTION", dir)
            .replace("POLARIZATION", pol);
        let m = model(&scene, "f32", 1);
        assert!(fused_update_applies(&m) && m.materials.any_magnetic());
        let log = compare(&scene, 40, &[ONE, THREE], Stepping::Fused);
        assert!(log.launches["update_fused_sources"] >= 40, "{dir}");
        assert!(log.launches["tfsf_incident"] >= 80, "{dir}");
        // Blocks and threads in reverse order: a thread's neighbours' corrected H is its own
        // computation, not a value another thread wrote.
        let reversed = Place {
            reversed: true,
            ..THREE
        };
        compare(&scene, 24, &[reversed, ACROSS_PEER], Stepping::Fused);
    }
}

#[test]
fn fused_update_falls_back_to_two_pass_beyond_the_sheets_its_launch_takes() {
    // Nine one-way plane waves: one magnetic sheet more than a fused launch's table holds.
    let wave = PERIODIC_SCENE
        .find("[[source]]\ntype = \"plane_wave\"")
        .map(|start| {
            let end = start + PERIODIC_SCENE[start..].find("\n\n").unwrap() + 2;
            &PERIODIC_SCENE[start..end]
        })
        .expect("the plane wave");
    let mut scene = PERIODIC_SCENE.to_string();
    for _ in 0..yee::plan::bytes::MAX_FUSED_SHEETS {
        scene.push_str(wave);
    }
    let m = model(&scene, "f32", 1);
    assert_eq!(
        m.sources.iter().filter(|s| s.magnetic.is_some()).count(),
        yee::plan::bytes::MAX_FUSED_SHEETS + 1
    );
    assert!(!fused_update_applies(&m));
    let log = compare(&scene, 20, &[ONE, THREE], Stepping::Fused);
    assert_eq!(log.launches.get("update_fused"), None);
    assert_eq!(log.launches.get("update_fused_sources"), None);
}

/// Launches per step of the host engine over `steps` steps of `model` on `slabs` slabs of one
/// emulated GPU (two-pass, or the fused update), leaving out those the plan does not count
/// (snapshot gathers, flux DFTs, NaN checks, the PMC mirror's negated copies).
fn engine_launches_per_step(model: &Model, slabs: usize, fused: bool, steps: usize) -> f64 {
    let ranges = split_even(model.grid.shape[0], slabs);
    let dev = HostDevice::new(model.precision, 1, false);
    let mut b = Engine::<HostDevice, f32>::new(
        dev,
        model,
        &ranges,
        &vec![0; ranges.len()],
        EngineOptions {
            staged_halos: false,
            fused,
        },
        "host",
    )
    .expect("host engine");
    let stepping = if fused {
        Stepping::Fused
    } else {
        Stepping::TwoPass
    };
    drive_stepping(model, &mut b, &ranges, Reads::Queued, stepping);
    let log = b.device().log.borrow();
    let uncounted = [
        "snapshot_gather",
        "flux_dft",
        "flux_rows",
        "check_finite",
        "copy_negated",
    ];
    let n: usize = log
        .launches
        .iter()
        .filter(|(k, _)| !uncounted.contains(k))
        .map(|(_, n)| n)
        .sum();
    n as f64 / steps as f64
}

#[test]
fn the_plans_kernel_launches_per_step_are_the_engines() {
    // The plan's GPU time counts each launch (a small grid's step is mostly launches): its
    // count per slab must be what the engine launches, on scenes with every kind of pass, one
    // slab and several (a pass then runs on the planes the halo copies read and on the rest
    // apart), both updates. Exact on one slab (periodic and PMC x faces included); on several
    // it may count up to a quarter more, never fewer: it takes a dispersive material's groups
    // over its objects' bounds and a TF/SF group over every plane of the slab with points (the
    // x faces' groups lie on one plane each), so it errs on the slow side.
    let tfsf = TFSF_SCENE
        .replace("DIRECTION", "[1.0, 2.0, 3.0]")
        .replace("POLARIZATION", "[-2.0, 1.0, 0.0]");
    let steps = 6;
    let _guard = serial();
    for scene in [PML_SCENE, MATERIALS_SCENE, PERIODIC_SCENE, PMC_SCENE, &tfsf] {
        let m = model(scene, "f32", steps);
        let layout = yee::plan::Layout::of(&m);
        for slabs in [1, 3] {
            for fused in [false, true] {
                let ranges = split_even(m.grid.shape[0], slabs);
                let planned: u64 = ranges
                    .iter()
                    .map(|r| layout.gpu_launches_per_step(*r, fused))
                    .sum();
                let got = engine_launches_per_step(&m, slabs, fused, steps);
                let what = format!("{} on {slabs} slab(s), fused {fused}", m.name);
                assert!(
                    planned as f64 >= got,
                    "{what}: planned {planned}, engine {got}"
                );
                if slabs == 1 {
                    assert_eq!(planned as f64, got, "{what}");
                } else {
                    assert!(
                        planned as f64 <= 1.25 * got,
                        "{what}: planned {planned}, engine {got}"
                    );
                }
            }
        }
    }
}
