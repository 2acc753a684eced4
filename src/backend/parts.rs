//! A [`State`] in parts: what one process holds of the whole state when a run is spread over
//! several ([`crate::ranks`]), where each part lies in the whole, and the interfaces a
//! checkpoint is written and read through part by part, so no process holds the whole state.
//!
//! Every per-cell array of a [`State`] is laid out by global x plane, so the part of a process
//! holding x planes [x0, x1) is a contiguous run of each array: of the fields at `x0 * ny *
//! nz`, of each psi array and each dispersive entry's cells at the sum of the lengths the
//! processes before it hold. Only the dispersive pole state is stored slot by slot (`[slot]
//! [cell]`), so a part of it is one run per slot.

use super::State;
use crate::real::Real;
use std::ops::Range;

/// The lengths of one state's arrays that depend on which cells it covers (the fields follow
/// from its x planes): a part's, or the whole's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateShape {
    /// Values of each psi array ([`State::psi`]'s order).
    pub psi: [[usize; 4]; 3],
    /// Per dispersive entry ((component, material) order): component, material, cells and
    /// pole-state values per cell (slots).
    pub dispersive: Vec<(u8, u8, usize, usize)>,
    /// Nodes of the TF/SF incident grid, when the state holds it.
    pub incident: Option<usize>,
}

impl StateShape {
    /// The shape of `state`.
    pub fn of<T: Real>(state: &State<T>) -> Self {
        StateShape {
            psi: state.psi.clone().map(|a| a.map(|v| v.len())),
            dispersive: state
                .dispersive
                .iter()
                .map(|d| {
                    let n = d.e_prev.len();
                    (d.component, d.material, n, d.state.len() / n.max(1))
                })
                .collect(),
            incident: state.incident.as_ref().map(|[e, _]| e.len()),
        }
    }

    /// The whole state's shape from the shapes of its parts, in x order: lengths add up, the
    /// dispersive entries are the union ((component, material) order), the incident grid is
    /// the first part's that holds it.
    pub fn whole(parts: &[StateShape]) -> Self {
        let mut w = StateShape::default();
        for p in parts {
            for (a, arrays) in p.psi.iter().enumerate() {
                for (k, n) in arrays.iter().enumerate() {
                    w.psi[a][k] += n;
                }
            }
            for &(c, m, n, slots) in &p.dispersive {
                match w.dispersive.iter_mut().find(|d| d.0 == c && d.1 == m) {
                    Some(d) => d.2 += n,
                    None => w.dispersive.push((c, m, n, slots)),
                }
            }
            w.incident = w.incident.or(p.incident);
        }
        w.dispersive.sort_unstable_by_key(|d| (d.0, d.1));
        w
    }

    /// Where part `index` of `parts` (in x order, starting at x plane `x0`) lies in the whole.
    pub fn place(parts: &[StateShape], index: usize, x0: usize) -> StatePlace {
        let before = &parts[..index];
        let mut psi = [[0usize; 4]; 3];
        for p in before {
            for (a, arrays) in p.psi.iter().enumerate() {
                for (k, n) in arrays.iter().enumerate() {
                    psi[a][k] += n;
                }
            }
        }
        let dispersive = parts[index]
            .dispersive
            .iter()
            .map(|&(c, m, _, _)| {
                before
                    .iter()
                    .flat_map(|p| &p.dispersive)
                    .filter(|d| d.0 == c && d.1 == m)
                    .map(|d| d.2)
                    .sum()
            })
            .collect();
        StatePlace {
            x0,
            psi,
            dispersive,
        }
    }
}

/// Where one part of a state lies in the whole: the offsets of its runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatePlace {
    /// The part's first x plane.
    pub x0: usize,
    /// The offset of each psi array's run in the whole array.
    pub psi: [[usize; 4]; 3],
    /// Per dispersive entry of the part (its order): the entry's first cell in the whole.
    pub dispersive: Vec<usize>,
}

impl StatePlace {
    /// The place of a state that is the whole (every offset 0).
    pub fn whole<T: Real>(state: &State<T>) -> Self {
        StatePlace {
            x0: 0,
            psi: [[0; 4]; 3],
            dispersive: vec![0; state.dispersive.len()],
        }
    }

    /// The part of a whole state of `whole` shape to read for a process holding x planes `x`
    /// and the cells of `part` placed here; with `flux`, also the surface DFTs.
    pub fn request(
        &self,
        x: Range<usize>,
        part: &StateShape,
        whole: &StateShape,
        flux: bool,
    ) -> StateRequest {
        let mut psi: [[Range<usize>; 4]; 3] = Default::default();
        for (a, arrays) in part.psi.iter().enumerate() {
            for (k, &n) in arrays.iter().enumerate() {
                psi[a][k] = self.psi[a][k]..self.psi[a][k] + n;
            }
        }
        let dispersive = part
            .dispersive
            .iter()
            .zip(&self.dispersive)
            .map(|(&(c, m, n, _), &at)| {
                let total = whole
                    .dispersive
                    .iter()
                    .find(|d| d.0 == c && d.1 == m)
                    .map_or(0, |d| d.2);
                (c, m, at..at + n, total)
            })
            .collect();
        StateRequest {
            x,
            psi,
            dispersive,
            incident: part.incident.is_some(),
            flux,
        }
    }
}

/// The part of a whole state one process reads on resuming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRequest {
    /// Its x planes (of the fields).
    pub x: Range<usize>,
    /// The run of each psi array.
    pub psi: [[Range<usize>; 4]; 3],
    /// Per dispersive entry it holds: component, material, its cells' run, and the whole
    /// entry's cells (the stride of the pole state's slots).
    pub dispersive: Vec<(u8, u8, Range<usize>, usize)>,
    /// Whether it holds the TF/SF incident grid.
    pub incident: bool,
    /// Whether it holds the surface DFTs (the process that accumulates them).
    pub flux: bool,
}

impl StateRequest {
    /// A request for the fields of x planes `x` alone.
    pub fn fields(x: Range<usize>) -> Self {
        StateRequest {
            x,
            psi: Default::default(),
            dispersive: Vec::new(),
            incident: false,
            flux: false,
        }
    }

    /// A request for the surface DFTs alone.
    pub fn surface_dfts() -> Self {
        StateRequest {
            flux: true,
            ..StateRequest::fields(0..0)
        }
    }
}

impl<T: Real> State<T> {
    /// What `request` asks of this state, which starts at x plane `x0` (0 for a whole state;
    /// a process's part of a run over several starts at its first plane): the in-memory
    /// counterpart of reading a part of a checkpoint (`crate::checkpoint::read_part`).
    pub fn part(&self, request: &StateRequest, x0: usize, plane: usize) -> State<T> {
        let x = request.x.start - x0..request.x.end - x0;
        let mut part = State::<T> {
            step: self.step,
            ..Default::default()
        };
        if !x.is_empty() {
            for (p, f) in part.fields.iter_mut().zip(&self.fields) {
                *p = f[x.start * plane..x.end * plane].to_vec();
            }
        }
        for (a, arrays) in part.psi.iter_mut().enumerate() {
            for (k, v) in arrays.iter_mut().enumerate() {
                *v = self.psi[a][k][request.psi[a][k].clone()].to_vec();
            }
        }
        for (component, material, cells, total) in &request.dispersive {
            let Some(d) = self
                .dispersive
                .iter()
                .find(|d| d.component == *component && d.material == *material)
            else {
                continue;
            };
            let slots = d.state.len() / (*total).max(1);
            part.dispersive.push(super::DispersiveState {
                component: *component,
                material: *material,
                e_prev: d.e_prev[cells.clone()].to_vec(),
                state: (0..slots)
                    .flat_map(|slot| &d.state[slot * total + cells.start..slot * total + cells.end])
                    .copied()
                    .collect(),
            });
        }
        if request.incident {
            part.incident = self.incident.clone();
        }
        if request.flux {
            part.flux = self.flux.clone();
        }
        part
    }
}

/// Reads one part of a state for an engine loading it ([`load_in_parts`]); Err says why not.
pub type PartReader<'a, T> = dyn Fn(&StateRequest) -> Result<State<T>, String> + 'a;

/// What [`load_in_parts`] hands an engine to load.
pub enum Loaded<T> {
    /// The fields of the slab's local planes `planes` (0-based, halos not counted), C order.
    Fields {
        /// Local planes of the slab.
        planes: Range<usize>,
        /// The six components of those planes.
        fields: [Vec<T>; 6],
    },
    /// The slab's psi arrays, dispersive entries ((component, material) order of its shape)
    /// and, where it holds one, the TF/SF incident grid.
    Rest(Box<State<T>>),
}

/// Load a whole state into an engine part by part, so that host memory holds one part at a
/// time: for each slab in x order (`slabs`: its x range and its [`StateShape`]), its fields in
/// parts of at most `planes_per_part` planes of `plane` cells, then the rest of its state,
/// each read with `read` and checked against the lengths the slab holds before `load` takes
/// it (with the slab's index in `slabs`). Returns the part read last: the surface DFTs (and
/// the step the state was taken after).
pub fn load_in_parts<T: Real>(
    slabs: &[(Range<usize>, StateShape)],
    plane: usize,
    planes_per_part: usize,
    read: &PartReader<'_, T>,
    load: &mut dyn FnMut(usize, Loaded<T>) -> Result<(), String>,
) -> Result<State<T>, String> {
    let shapes: Vec<StateShape> = slabs.iter().map(|(_, s)| s.clone()).collect();
    let whole = StateShape::whole(&shapes);
    let first = slabs.first().map_or(0, |(x, _)| x.start);
    let mismatch = |what: &str, got: usize, want: usize| {
        format!("the saved {what} holds {got} values where this run holds {want}")
    };
    for (j, (x, shape)) in slabs.iter().enumerate() {
        let n = x.len();
        for a in (0..n).step_by(planes_per_part.max(1)) {
            let planes = a..(a + planes_per_part.max(1)).min(n);
            let part = read(&StateRequest::fields(
                x.start + planes.start..x.start + planes.end,
            ))?;
            for f in &part.fields {
                if f.len() != planes.len() * plane {
                    return Err(mismatch("fields", f.len(), planes.len() * plane));
                }
            }
            load(
                j,
                Loaded::Fields {
                    planes,
                    fields: part.fields,
                },
            )?;
        }
        let place = StateShape::place(&shapes, j, first);
        let mut request = place.request(x.start..x.start, shape, &whole, false);
        request.incident = shape.incident.is_some();
        let part = read(&request)?;
        let got = StateShape::of(&part);
        if got.psi != shape.psi {
            return Err(format!(
                "the saved psi arrays do not match this run's CPML ({:?} against {:?} values)",
                got.psi, shape.psi
            ));
        }
        if got.dispersive != shape.dispersive {
            return Err("the saved dispersive state does not match this run's materials".into());
        }
        if got.incident != shape.incident {
            return Err(mismatch(
                "TF/SF incident grid",
                got.incident.unwrap_or(0),
                shape.incident.unwrap_or(0),
            ));
        }
        load(j, Loaded::Rest(Box::new(part)))?;
    }
    read(&StateRequest::surface_dfts())
}

/// Takes a state part by part: a checkpoint being written ([`super::Backend::write_state`]).
pub trait StateSink<T> {
    /// Called once, first, with the whole state's shape.
    fn begin(&mut self, whole: &StateShape) -> Result<(), String>;
    /// One part and where it lies; the parts of all processes in turn, each once.
    fn part(&mut self, part: &State<T>, place: &StatePlace) -> Result<(), String>;
}

/// Puts a whole state together in memory from the pieces an engine hands over
/// ([`super::Backend::write_state`]): an engine's export of its whole state is its checkpoint
/// written into this, so both take one path.
#[derive(Default)]
pub struct Assembler<T> {
    state: State<T>,
    whole: StateShape,
    plane: usize,
    /// The first x plane of the pieces (that of the engine's first slab).
    x0: Option<usize>,
}

impl<T: Real> Assembler<T> {
    /// An empty assembler for fields of `plane` cells per x plane.
    pub fn new(plane: usize) -> Self {
        Assembler {
            plane,
            ..Default::default()
        }
    }

    /// The state put together, taken after `step` steps.
    pub fn into_state(self, step: usize) -> State<T> {
        State { step, ..self.state }
    }
}

impl<T: Real> StateSink<T> for Assembler<T> {
    fn begin(&mut self, whole: &StateShape) -> Result<(), String> {
        let zeros = |n: usize| vec![T::ZERO; n];
        self.state.psi = whole.psi.map(|a| a.map(zeros));
        self.state.dispersive = whole
            .dispersive
            .iter()
            .map(|&(component, material, n, slots)| super::DispersiveState {
                component,
                material,
                e_prev: zeros(n),
                state: zeros(n * slots),
            })
            .collect();
        self.whole = whole.clone();
        Ok(())
    }

    fn part(&mut self, part: &State<T>, place: &StatePlace) -> Result<(), String> {
        if !part.fields[0].is_empty() {
            // Pieces of fields come in x order, each right after the one before.
            let x0 = *self.x0.get_or_insert(place.x0);
            let planes = self.state.fields[0].len() / self.plane.max(1);
            if place.x0 != x0 + planes {
                return Err(format!(
                    "a piece of fields at x plane {} after {} planes from {x0}",
                    place.x0, planes
                ));
            }
            for (f, p) in self.state.fields.iter_mut().zip(&part.fields) {
                f.extend_from_slice(p);
            }
        }
        for (a, arrays) in part.psi.iter().enumerate() {
            for (k, v) in arrays.iter().enumerate() {
                let at = place.psi[a][k];
                self.state.psi[a][k][at..at + v.len()].copy_from_slice(v);
            }
        }
        for (d, &at) in part.dispersive.iter().zip(&place.dispersive) {
            let n = d.e_prev.len();
            let whole = self
                .state
                .dispersive
                .iter_mut()
                .find(|w| w.component == d.component && w.material == d.material)
                .ok_or("a dispersive piece the whole state lacks")?;
            let total = whole.e_prev.len();
            whole.e_prev[at..at + n].copy_from_slice(&d.e_prev);
            for (slot, run) in d.state.chunks(n.max(1)).enumerate() {
                whole.state[slot * total + at..][..run.len()].copy_from_slice(run);
            }
        }
        if self.state.incident.is_none() {
            self.state.incident.clone_from(&part.incident);
        }
        if !part.flux.is_empty() {
            self.state.flux.clone_from(&part.flux);
        }
        Ok(())
    }
}

/// Bytes of field values (the six components together) that one part of a checkpoint holds at
/// most when an engine hands its state over part by part ([`planes_per_part`]), so that
/// writing a checkpoint holds no second copy of the fields in host memory.
pub const FIELD_PART_BYTES: usize = 64 << 20;

/// The x planes of `plane` cells each, in values of `value_bytes`, that one part of a
/// checkpoint holds: `part_bytes` (by default [`FIELD_PART_BYTES`]) of the six components, at
/// least one plane.
pub fn planes_per_part(plane: usize, value_bytes: usize, part_bytes: usize) -> usize {
    (part_bytes / (6 * plane * value_bytes).max(1)).max(1)
}

/// Reads a state: the whole (`None`) or the part of one process.
pub type StateReader<'a, T> = dyn Fn(Option<&StateRequest>) -> Result<State<T>, String> + 'a;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_placed_after_the_parts_before_them() {
        let a = StateShape {
            psi: [[3, 0, 0, 0], [5; 4], [0; 4]],
            dispersive: vec![(2, 1, 4, 2)],
            incident: None,
        };
        let b = StateShape {
            psi: [[0; 4], [7; 4], [1; 4]],
            dispersive: vec![(0, 1, 6, 2), (2, 1, 10, 2)],
            incident: Some(9),
        };
        let parts = [a.clone(), b.clone()];
        let w = StateShape::whole(&parts);
        assert_eq!(w.psi, [[3, 0, 0, 0], [12; 4], [1; 4]]);
        assert_eq!(w.dispersive, vec![(0, 1, 6, 2), (2, 1, 14, 2)]);
        assert_eq!(w.incident, Some(9));
        let p = StateShape::place(&parts, 1, 20);
        assert_eq!(p.x0, 20);
        assert_eq!(p.psi, [[3, 0, 0, 0], [5; 4], [0; 4]]);
        assert_eq!(p.dispersive, vec![0, 4]);
        let r = p.request(20..30, &b, &w, false);
        assert_eq!(r.psi[1][0], 5..12);
        assert_eq!(r.dispersive, vec![(0, 1, 0..6, 6), (2, 1, 4..14, 14)]);
        assert!(r.incident && !r.flux);
    }
}
