//! The CUDA engine's part of a run over MPI ranks, checked without MPI and without a GPU: the
//! host-compiled kernels behind the engine (as in `tests/host_kernels.rs`), one engine per
//! rank in one process, each built as a rank builds it (`CudaEngine::for_process` on its own
//! slabs, from its local model and its halos: `RankLayout::local_model`,
//! `Exchange::process_halos`), stepped in the order the MPI driver steps a rank
//! (`src/ranks/driver.rs`): the half step's passes; every plane another rank reads
//! (`read_plane`), before the rank's own halo copies, which is when an engine that defers its
//! interior planes must already have updated them; the copies within the rank; the received
//! halos written (`write_halo`, negated across a PMC face). Probes are queued and drained on
//! each rank, snapshots queued and taken as each rank's part, the final fields gathered part
//! by part, all in the driver's way.
//!
//! The same steps over CPU backends of the rank parts, and a single CPU backend over the whole
//! grid, give the reference: all three agree bit for bit (fields, probe series, snapshots), on
//! 2 and 3 ranks, uneven slab counts, with PML, a dielectric, a conductor and a PEC box, on
//! periodic x faces (whose wrap copies cross ranks) and on a PMC x minimum (a mirror within
//! rank 0).

mod cuda_support;

use cuda_support::host::*;
use cuda_support::*;
use yee::backend::cpu::CpuBackend;
use yee::backend::cuda::engine::estimate_for_process;
use yee::backend::cuda::{CudaEngine, EngineOptions};
use yee::backend::{Backend, Half};
use yee::decomp::{split_even, ProcessHalos, SlabRange};
use yee::model::{Component, Model};
use yee::plan::ranks::plan_ranks;
use yee::plan::{parse_gpus, BackendChoice, Hardware, PlanOptions};
use yee::ranks::{rank_slabs, Exchange, RankLayout};
use yee::real::Real;
use yee::run::{magnetic_source_values, source_values};

/// Every rank's layout for `slabs` slabs of `model` over `ranks` ranks (the plan's split:
/// contiguous slab ranges, sizes differing by at most one).
fn layouts(model: &Model, slabs: usize, ranks: usize) -> Vec<RankLayout> {
    let all = split_even(model.grid.shape[0], slabs);
    let groups = rank_slabs(slabs, ranks);
    (0..ranks)
        .map(|rank| RankLayout {
            slabs: all.clone(),
            ranks: groups.clone(),
            rank,
        })
        .collect()
}

/// One rank's backend and what the driver keeps beside it.
struct RankPart<B> {
    layout: RankLayout,
    exchanges: [Exchange; 2],
    local: B,
    /// The probe samples this rank holds, in model order.
    samples: Vec<(Component, [usize; 3])>,
}

/// Step the ranks' backends through the model as the MPI driver steps them and record what
/// rank 0 would write.
fn drive_ranks<B: Backend + Send>(model: &Model, parts: &mut [RankPart<B>]) -> Trace {
    let all_samples: Vec<(Component, [usize; 3])> = model
        .probes
        .iter()
        .flat_map(|p| p.samples.clone())
        .collect();
    let owner = |x: usize| parts[0].layout.owner_of_x(x);
    let owners: Vec<usize> = all_samples.iter().map(|s| owner(s.1[0])).collect();
    let mut trace = Trace {
        probes: vec![Vec::new(); all_samples.len()],
        snapshots: vec![Vec::new(); model.snapshots.iter().map(|s| s.regions.len()).sum()],
        ..Default::default()
    };
    let plane = model.grid.shape[1] * model.grid.shape[2];
    let (mut m, mut j) = (Vec::new(), Vec::new());
    for n in 0..model.grid.steps {
        magnetic_source_values(model, n as f64 * model.grid.dt, &mut m);
        source_values(model, (n as f64 + 0.5) * model.grid.dt, &mut j);
        for (half, values) in [(Half::H, &m), (Half::E, &j)] {
            let h = half as usize;
            // Each rank's passes on a thread of its own, as each rank runs in a process of its
            // own: the surface ports trade with the ranks beside within the E half step.
            std::thread::scope(|s| {
                for p in parts.iter_mut() {
                    s.spawn(move || {
                        p.local.begin_half(half);
                        for &pass in half.passes() {
                            p.local.run_pass(half, pass, values);
                        }
                    });
                }
            });
            exchange_ranks(parts, h, plane);
        }
        let step = n + 1;
        // Probes: each rank's values of its samples, placed by owner in model order.
        let mut mine: Vec<Vec<f64>> = Vec::new();
        for p in parts.iter_mut() {
            let mut out = Vec::new();
            if !p.samples.is_empty() {
                p.local.queue_probes(&p.samples);
                p.local.drain_probes(&mut out, true);
            }
            assert_eq!(out.len(), p.samples.len(), "one value per own sample");
            mine.push(out);
        }
        let mut next = vec![0; parts.len()];
        for (k, &o) in owners.iter().enumerate() {
            trace.probes[k].push(mine[o][next[o]]);
            next[o] += 1;
        }
        // Snapshots: each rank queues its part (its local model's slot) and rank 0 places
        // the parts by their first row.
        let mut slot = 0;
        for s in &model.snapshots {
            for (c, region) in &s.regions {
                if step % s.every == 0 {
                    let mut whole = vec![0.0; region.len()];
                    let row = RankLayout::row_len(region);
                    for p in parts.iter_mut() {
                        let Some((first, sub)) = p.layout.part(region, p.layout.rank) else {
                            continue;
                        };
                        let ticket = p.local.queue_gather(*c, &sub);
                        let values = p.local.take_gather(ticket).expect("no device failure");
                        assert_eq!(values.len(), sub.len());
                        for (w, v) in whole[first * row..].iter_mut().zip(values) {
                            *w = v.to_f64();
                        }
                    }
                    trace.snapshots[slot].extend(whole);
                }
                slot += 1;
            }
        }
    }
    for p in parts.iter() {
        assert!(p.local.all_finite(), "fields stayed finite");
        assert_eq!(p.local.failure(), None);
    }
    let region = whole(model);
    let row = RankLayout::row_len(&region);
    trace.fields = Component::ALL
        .iter()
        .map(|&c| {
            let mut out = vec![0.0; region.len()];
            for p in parts.iter() {
                let (first, sub) = p.layout.part(&region, p.layout.rank).expect("own planes");
                let mut part = vec![<B::Real as Real>::ZERO; sub.len()];
                p.local.gather(c, &sub, &mut part);
                for (w, v) in out[first * row..].iter_mut().zip(&part) {
                    *w = v.to_f64();
                }
            }
            out
        })
        .collect();
    trace
}

/// The halo exchange of half step `h` (0: H, 1: E) between the ranks' backends, as the MPI
/// driver makes it: every sent plane read before any rank's own copies (the driver posts its
/// sends first), the planes keyed by the copy's index in the run's halo plan, then each rank's
/// copies within itself, then the received planes written (negated for a PMC mirror). A
/// plane holds `plane` values of each field set (a Bloch pair's two).
fn exchange_ranks<B: Backend>(parts: &mut [RankPart<B>], h: usize, plane: usize) {
    let mut travelling = Vec::new();
    for p in parts.iter_mut() {
        for s in &p.exchanges[h].sends {
            let mut buf = vec![<B::Real as Real>::ZERO; plane * p.local.field_sets()];
            p.local.read_plane(s.component, s.slab, s.x, &mut buf);
            travelling.push((s.index, buf));
        }
    }
    for p in parts.iter_mut() {
        let local = p.exchanges[h].local.clone();
        p.local.exchange(&local);
    }
    for p in parts.iter_mut() {
        for r in &p.exchanges[h].receives {
            let (_, buf) = travelling
                .iter()
                .find(|(i, _)| *i == r.index)
                .expect("a sender for every receive");
            let mut buf = buf.clone();
            if r.negate {
                buf.iter_mut().for_each(|v| *v = -*v);
            }
            p.local.write_halo(r.component, r.slab, r.side, &buf);
        }
    }
}

/// The rank parts of `model` with backends built by `build(local model, local ranges, halos)`.
fn rank_parts<B: Backend>(
    model: &Model,
    slabs: usize,
    ranks: usize,
    mut build: impl FnMut(&Model, &RankLayout, &[Exchange; 2]) -> B,
) -> Vec<RankPart<B>> {
    layouts(model, slabs, ranks)
        .into_iter()
        .map(|layout| {
            let exchanges = layout.exchanges(&model.boundaries);
            let local_model = layout.local_model(model);
            let local = build(&local_model, &layout, &exchanges);
            let samples = local_model
                .probes
                .iter()
                .flat_map(|p| p.samples.clone())
                .collect();
            RankPart {
                layout,
                exchanges,
                local,
                samples,
            }
        })
        .collect()
}

/// A host-compiled engine of one rank's slabs `ranges` on one emulated GPU, from its local
/// model `m` and its exchanges `halos`.
fn rank_engine<T: Real>(
    m: &Model,
    ranges: &[SlabRange],
    halos: ProcessHalos,
) -> CudaEngine<HostDevice, T> {
    CudaEngine::<HostDevice, T>::for_process(
        HostDevice::new(T::PRECISION, 1, false),
        m,
        ranges,
        &vec![0; ranges.len()],
        EngineOptions::default(),
        "host",
        halos,
    )
    .expect("host engine of a rank")
}

/// `model` over `ranks` ranks of `slabs` slabs in all: the host engines' trace and the CPU
/// parts' trace, each against the single CPU backend, bit for bit; every engine allocates
/// what the engine's estimate of its local model and slabs says.
fn check<T: Real>(model: &Model, slabs: usize, ranks: usize) {
    let _guard = serial();
    let what = format!(
        "{} {} on {ranks} ranks of {slabs} slabs",
        model.name,
        T::PRECISION.name()
    );
    let want = cpu_trace::<T>(model);
    let mut cpu = rank_parts(model, slabs, ranks, |m, layout, _| {
        CpuBackend::<T>::new(m, &layout.local_ranges())
    });
    assert_identical(
        &drive_ranks(model, &mut cpu),
        &want,
        &format!("cpu parts, {what}"),
    );
    let mut host = rank_parts(model, slabs, ranks, |m, layout, exchanges| {
        let ranges = layout.local_ranges();
        let halos = Exchange::process_halos(exchanges);
        let engine = rank_engine::<T>(m, &ranges, halos.clone());
        assert_eq!(
            engine.allocation(),
            estimate_for_process(m, &ranges, std::mem::size_of::<T>(), &halos),
            "rank {}: the engine allocates what estimate() of its part says",
            layout.rank
        );
        // What it counts is what the device gave it: beside its count, the same uncounted
        // tables as an engine of the same slabs that exchanges with no other process, so the
        // pinned planes of its exchanges with the other ranks are counted to the byte.
        let uncounted = |e: &CudaEngine<HostDevice, T>| {
            let log = e.device().log.borrow().clone();
            (log.device_bytes + log.pinned_bytes) as u64 - e.allocation().total()
        };
        let alone = rank_engine::<T>(
            m,
            &ranges,
            ProcessHalos {
                plan: halos.plan.clone(),
                sent: [Vec::new(), Vec::new()],
                received: [0, 0],
            },
        );
        assert_eq!(
            uncounted(&engine),
            uncounted(&alone),
            "rank {}",
            layout.rank
        );
        assert_eq!(
            engine.allocation().halos - alone.allocation().halos,
            halos.staging_planes() as u64
                * (m.grid.shape[1] * m.grid.shape[2] * std::mem::size_of::<T>()) as u64,
            "rank {}: one pinned plane to read through, one per plane received",
            layout.rank
        );
        engine
    });
    // `yee plan --ranks R --backend cuda` lists what each rank's engine allocates, for the
    // split `mpirun -n R yee run --backend cuda --slabs-per-gpu S/R` makes (S/R slabs each).
    if slabs % ranks == 0 {
        let plan = cuda_rank_plan(model, slabs, ranks);
        assert_eq!(plan.parts.len(), ranks);
        for (part, engine) in plan.parts.iter().zip(&host) {
            let ranges = engine.layout.local_ranges();
            assert_eq!(
                (part.x[0], part.x[1], part.slabs[1] - part.slabs[0]),
                (ranges[0].x0, ranges[ranges.len() - 1].x1, ranges.len()),
                "{what}: the plan's split is the test's"
            );
            assert_eq!(
                part.allocation,
                engine.local.allocation(),
                "{what}: rank {}'s plan lists what its engine allocates",
                part.rank
            );
            assert!(part.fits && part.gpu == Some(0));
        }
    }
    assert_identical(
        &drive_ranks(model, &mut host),
        &want,
        &format!("host engines, {what}"),
    );
}

/// `yee plan --ranks R --backend cuda` of `model` on one 80 GiB GPU per rank, for the split
/// `mpirun -n R yee run --backend cuda --slabs-per-gpu S/R` makes (S/R slabs each).
fn cuda_rank_plan(model: &Model, slabs: usize, ranks: usize) -> yee::plan::ranks::RankPlan {
    let options = PlanOptions {
        backend: BackendChoice::Cuda,
        slabs_per_gpu: Some(slabs / ranks),
        ..PlanOptions::default()
    };
    let hardware = Hardware::new(parse_gpus("1x80GiB").unwrap(), 64 << 30, 2);
    plan_ranks(model, &hardware, &options, ranks, None)
}

#[test]
fn host_engines_over_ranks_give_the_single_process_fields_bit_for_bit() {
    let pml = model(PML_SCENE, "f32", 40);
    check::<f32>(&pml, 2, 2);
    // Uneven: 5 slabs over 3 ranks (2, 2, 1), the middle rank's two slabs copying between
    // themselves and with both neighbours.
    check::<f32>(&pml, 5, 3);
    check::<f64>(&model(PML_SCENE, "f64", 30), 3, 2);
}

#[test]
fn host_engines_over_ranks_wrap_periodic_x_and_mirror_a_pmc_x_minimum() {
    // Periodic x: the wrap copies (last plane to the first slab's left halo and back) cross
    // from the last rank to the first.
    check::<f32>(&model(PERIODIC_SCENE, "f32", 40), 3, 3);
    // A PMC x minimum: rank 0 mirrors its own first plane into its left halo.
    let pmc = PML_SCENE.replace(
        "default = { type = \"pml\", cells = 5 }",
        "default = { type = \"pml\", cells = 5 }\nx_min = { type = \"pmc\" }",
    );
    assert_ne!(pmc, PML_SCENE);
    check::<f32>(&model(&pmc, "f32", 40), 4, 2);
}

#[test]
fn a_rank_engine_runs_its_interior_after_the_planes_it_sends_are_read() {
    // Over MPI ranks the driver reads the planes a rank sends, posts them, and only then
    // calls the engine's exchange, which launches the interior planes: so the messages
    // travel while the GPU updates the interior. With one slab per rank there is no copy
    // within the process, and the engine must still defer its interior (it ran every plane
    // at once, and the first plane read waited for all of them).
    let _guard = serial();
    let model = model(PML_SCENE, "f32", 30);
    let mut parts = rank_parts(&model, 2, 2, |m, layout, exchanges| {
        rank_engine::<f32>(
            m,
            &layout.local_ranges(),
            Exchange::process_halos(exchanges),
        )
    });
    let plane = model.grid.shape[1] * model.grid.shape[2];
    let sent = parts[0].exchanges[0].sends[0];
    assert_eq!(sent.component, Component::Hy);
    // An interior plane of rank 0 near the dipole (the grid's centre), two planes in.
    let inner = sent.x - 2;
    let read = |p: &mut RankPart<CudaEngine<HostDevice, f32>>, x: usize| {
        let mut v = vec![0f32; plane];
        p.local.read_plane(Component::Hy, 0, x, &mut v);
        v
    };
    let (mut m, mut j) = (Vec::new(), Vec::new());
    let steps = model.grid.steps;
    for n in 0..steps {
        magnetic_source_values(&model, n as f64 * model.grid.dt, &mut m);
        source_values(&model, (n as f64 + 0.5) * model.grid.dt, &mut j);
        for (half, values) in [(Half::H, &m), (Half::E, &j)] {
            for p in parts.iter_mut() {
                p.local.begin_half(half);
                for &pass in half.passes() {
                    p.local.run_pass(half, pass, values);
                }
            }
            let last_h = n + 1 == steps && half == Half::H;
            let before = last_h.then(|| (read(&mut parts[0], sent.x), read(&mut parts[0], inner)));
            exchange_ranks(&mut parts, half as usize, plane);
            if let Some((sent_before, inner_before)) = before {
                assert_eq!(
                    read(&mut parts[0], sent.x),
                    sent_before,
                    "the plane sent is final before the exchange"
                );
                let inner_after = read(&mut parts[0], inner);
                assert!(
                    inner_after.iter().any(|v| *v != 0.0),
                    "a plane the wave has reached"
                );
                assert_ne!(
                    inner_after, inner_before,
                    "the interior plane is updated at the exchange, not before"
                );
            }
        }
    }
    // Every plane sent left through pinned memory and every plane received came in through
    // it: one copy each per step (rank 0 sends 2 H planes and receives 2 E planes, rank 1 the
    // reverse), besides the reads of this test.
    for p in &parts {
        let log = p.local.device().log.borrow().clone();
        assert!(
            log.to_pinned >= 2 * steps,
            "{} copies to pinned",
            log.to_pinned
        );
        assert_eq!(log.from_pinned, 2 * steps, "copies from pinned");
    }
}

/// A rank's local model keeps its part of every snapshot that crosses its planes (its backend
/// sizes and gathers only that part), and the ranks' parts tile the snapshot. [`PML_SCENE`]'s
/// snapshot is a z plane, so it crosses every rank.
#[test]
fn each_rank_keeps_its_part_of_every_snapshot_and_the_parts_tile_it() {
    let model = model(PML_SCENE, "f32", 10);
    let cells = |regions: &[(Component, yee::model::Region)]| -> usize {
        regions.iter().map(|(_, r)| r.len()).sum()
    };
    for ranks in [2, 3] {
        let mut held = vec![0; model.snapshots.len()];
        for layout in layouts(&model, 4, ranks) {
            let local = layout.local_model(&model);
            assert_eq!(
                local.snapshots.len(),
                model.snapshots.len(),
                "rank {} of {ranks}",
                layout.rank
            );
            for (h, s) in held.iter_mut().zip(&local.snapshots) {
                assert!(!s.regions.is_empty());
                *h += cells(&s.regions);
            }
        }
        let whole: Vec<usize> = model.snapshots.iter().map(|s| cells(&s.regions)).collect();
        assert_eq!(held, whole, "{ranks} ranks");
    }
}

#[test]
fn host_bloch_pairs_over_ranks_give_the_single_process_fields_bit_for_bit() {
    // Each rank holds the Bloch pair of its part (two host engines, as `mpirun --backend
    // cuda` builds them); a halo plane carries both sets, so the x Bloch images (the halo
    // planes of the periodic x wrap, between the first rank and the last) are both sets'.
    // Both sets' fields and the real set's probes equal one CPU pair's, bit for bit.
    use yee::backend::bloch::BlochPair;
    let _guard = serial();
    let mut model = model(BLOCH_SCENE, "f64", 40);
    // Rank 0's driver accumulates the flux DFTs over ranks (tests/mpi.rs); here only fields.
    model.fluxes.clear();
    let single = split_even(model.grid.shape[0], 1);
    let imaginary = model.imaginary_set();
    let mut cpu = BlochPair::new(
        &model,
        CpuBackend::<f64>::new(&model, &single),
        CpuBackend::<f64>::new(&imaginary, &single),
    );
    let want = drive(&model, &mut cpu, &single);
    let want_im = set_fields(&model, |c, r, out| cpu.imaginary().gather(c, r, out));
    assert!(
        want_im[2].iter().any(|&v| v != 0.0),
        "the imaginary set is driven"
    );
    for (slabs, ranks) in [(2, 2), (5, 3)] {
        let mut parts = rank_parts(&model, slabs, ranks, |m, layout, exchanges| {
            let ranges = layout.local_ranges();
            let halos = Exchange::process_halos(exchanges);
            let re = rank_engine::<f64>(m, &ranges, halos.clone());
            let im = rank_engine::<f64>(&m.imaginary_set(), &ranges, halos);
            BlochPair::new(m, re, im)
        });
        let what = format!("Bloch pairs on {ranks} ranks of {slabs} slabs");
        // `yee plan --ranks R --backend cuda` lists what each rank's pair allocates.
        let options = PlanOptions {
            backend: BackendChoice::Cuda,
            slabs_per_gpu: Some(slabs.div_ceil(ranks)),
            ..PlanOptions::default()
        };
        let hardware = Hardware::new(parse_gpus("1x80GiB").unwrap(), 64 << 30, 2);
        if slabs % ranks == 0 {
            let plan = plan_ranks(&model, &hardware, &options, ranks, None);
            for (part, p) in plan.parts.iter().zip(&parts) {
                assert_eq!(
                    part.allocation,
                    p.local.allocation(),
                    "{what}: rank {}",
                    part.rank
                );
            }
        }
        assert_identical(&drive_ranks(&model, &mut parts), &want, &what);
        let got_im = set_fields(&model, |c, r, out| {
            let row = RankLayout::row_len(r);
            for p in &parts {
                let (first, sub) = p.layout.part(r, p.layout.rank).expect("own planes");
                let part = &mut out[first * row..first * row + sub.len()];
                p.local.gather_set(1, c, &sub, part);
            }
        });
        assert_eq!(got_im, want_im, "{what}: the imaginary set");
    }
}

/// The six components of a field set over the whole grid, gathered by `gather`.
fn set_fields(
    model: &Model,
    gather: impl Fn(Component, &yee::model::Region, &mut [f64]),
) -> Vec<Vec<f64>> {
    let r = whole(model);
    Component::ALL
        .iter()
        .map(|&c| {
            let mut out = vec![0.0; r.len()];
            gather(c, &r, &mut out);
            out
        })
        .collect()
}

/// The values sent and not yet received, by (sender, receiver, trade), in order.
type Slots<T> = std::collections::HashMap<(usize, usize, usize), Vec<Vec<T>>>;

/// The ranks' mailboxes for the surface ports' trades between the threads that stand for
/// the ranks: per (sender, receiver, trade) the values sent, in order.
#[derive(Default)]
struct Mailbox<T> {
    slots: std::sync::Mutex<Slots<T>>,
    arrived: std::sync::Condvar,
}

/// [`yee::backend::ports::PortLinks`] between threads, as `MpiPortLinks` between processes.
struct ThreadLinks<T> {
    layout: RankLayout,
    mail: std::sync::Arc<Mailbox<T>>,
}

impl<T: Copy + Send + Sync> yee::backend::ports::PortLinks<T> for ThreadLinks<T> {
    fn part_of_x(&self, x: usize) -> usize {
        self.layout.owner_of_x(x)
    }

    fn trade(&mut self, phase: usize, sends: &[(usize, &[T])], receives: &mut [(usize, &mut [T])]) {
        let me = self.layout.rank;
        let mut slots = self.mail.slots.lock().unwrap();
        for (to, values) in sends {
            slots
                .entry((me, *to, phase))
                .or_default()
                .push(values.to_vec());
        }
        self.mail.arrived.notify_all();
        for (from, out) in receives.iter_mut() {
            loop {
                if let Some(v) = slots.get_mut(&(*from, me, phase)).filter(|q| !q.is_empty()) {
                    out.copy_from_slice(&v.remove(0));
                    break;
                }
                slots = self.mail.arrived.wait(slots).unwrap();
            }
        }
    }
}

/// The surface ports of `MATERIALS_SCENE`'s metal sphere over 2 and 3 ranks: each rank's
/// engine (host-compiled) steps the ports of its own planes and trades the boundary values
/// with the ranks beside it twice a step through `Backend::link_ports`, as a rank does over
/// MPI: the fields, probes and snapshots are the single CPU backend's bit for bit, as are the
/// CPU ranks' over the same links; each engine allocates what its estimate and the plan of
/// `yee plan --ranks R --backend cuda` list, its trades included. An engine that was not
/// linked fails at its first step rather than read values that never came.
#[test]
fn rank_engines_trade_their_surface_ports_and_give_the_single_process_fields() {
    let _guard = serial();
    let text = MATERIALS_SCENE.replace("metal = { conformal = false, ", "metal = { ");
    for precision in ["f32", "f64"] {
        let m = model(&text, precision, 30);
        assert!(!m.surface_ports().is_empty());
        match precision {
            "f32" => ports_over_ranks::<f32>(&m),
            _ => ports_over_ranks::<f64>(&m),
        }
    }
}

fn ports_over_ranks<T: Real>(m: &Model) {
    let want = cpu_trace::<T>(m);
    for (slabs, ranks) in [(2, 2), (3, 3), (4, 2)] {
        let what = format!(
            "{} ports on {ranks} ranks of {slabs} slabs",
            T::PRECISION.name()
        );
        let mail = std::sync::Arc::new(Mailbox::<T>::default());
        let link = |layout: &RankLayout| {
            let (layout, mail) = (layout.clone(), std::sync::Arc::clone(&mail));
            move || -> Box<dyn yee::backend::ports::PortLinks<T>> {
                Box::new(ThreadLinks {
                    layout: layout.clone(),
                    mail: std::sync::Arc::clone(&mail),
                })
            }
        };
        let mut cpu = rank_parts(m, slabs, ranks, |local, layout, _| {
            let mut b = CpuBackend::<T>::new(local, &layout.local_ranges());
            b.link_ports(&link(layout)).unwrap();
            b
        });
        assert_identical(&drive_ranks(m, &mut cpu), &want, &format!("cpu, {what}"));
        let mut host = rank_parts(m, slabs, ranks, |local, layout, exchanges| {
            let ranges = layout.local_ranges();
            let halos = Exchange::process_halos(exchanges);
            let mut e = rank_engine::<T>(local, &ranges, halos.clone());
            let real = std::mem::size_of::<T>();
            let mut estimate = estimate_for_process(local, &ranges, real, &halos);
            let planes = layout.planes(layout.rank);
            estimate.dispersive += local.surface_ports().crossings(planes).gpu_bytes(real);
            assert_eq!(e.allocation(), estimate, "rank {}", layout.rank);
            e.link_ports(&link(layout)).unwrap();
            e
        });
        if slabs % ranks == 0 {
            let plan = cuda_rank_plan(m, slabs, ranks);
            for (part, engine) in plan.parts.iter().zip(&host) {
                assert_eq!(part.allocation, engine.local.allocation(), "{what}");
            }
        }
        assert_identical(&drive_ranks(m, &mut host), &want, &format!("host, {what}"));
    }
    // Not linked: the first step fails, saying why.
    let layout = layouts(m, 2, 2).remove(0);
    let halos = Exchange::process_halos(&layout.exchanges(&m.boundaries));
    let mut e = rank_engine::<T>(&layout.local_model(m), &layout.local_ranges(), halos);
    e.begin_half(Half::H);
    for &pass in Half::H.passes() {
        e.run_pass(Half::H, pass, &[]);
    }
    e.begin_half(Half::E);
    for &pass in Half::E.passes() {
        e.run_pass(Half::E, pass, &[]);
    }
    let failure = e.failure().expect("an engine not linked fails");
    assert!(failure.contains("link them first"), "{failure}");
}
