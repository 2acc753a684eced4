//! A [`State`] in parts: what one process holds of the whole state when a run is spread over
//! several ([`crate::ranks`]), where each part lies in the whole, and the interfaces a
//! checkpoint is written and read through part by part, so no process holds the whole state.
//!
//! The fields are laid out by global x plane, so the part of a process holding x planes
//! [x0, x1) is the run at `x0 * ny * nz`. Every other array is registered by the pass that
//! keeps it ([`StateArray`]) with its [`Spread`]: per cell, a part holds a run of each slot and
//! the whole is the parts' runs in x order; or shared, one copy held alike by the parts that
//! hold it. Nothing here knows which physics an array belongs to.

use super::State;
use crate::real::Real;
use std::ops::Range;

/// How a registered state array lies across the parts of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// Values per cell in `slots` slots, stored `[slot][cell]`: each part holds a run of
    /// cells, and the whole is the parts' runs concatenated in x order, slot by slot.
    Cells {
        /// Values per cell.
        slots: usize,
    },
    /// One copy, the same in every part that holds it (the whole's is the first part's).
    Shared,
}

impl Spread {
    /// Slots per cell: 1 for a shared array (its values are its cells).
    pub fn slots(self) -> usize {
        match self {
            Spread::Cells { slots } => slots,
            Spread::Shared => 1,
        }
    }
}

/// One array a pass registers, with the values of a part or of the whole.
#[derive(Debug, Clone, PartialEq)]
pub struct StateArray<T> {
    /// Its name, unique in a state ([`super::pass::arrays`] makes them).
    pub name: String,
    /// How it lies across the parts.
    pub spread: Spread,
    /// The values, `[slot][cell]`.
    pub values: Vec<T>,
}

impl<T> StateArray<T> {
    /// Cells it holds (values per slot).
    pub fn cells(&self) -> usize {
        self.values.len() / self.spread.slots().max(1)
    }
}

/// An array's name, spread and cells, without its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayShape {
    /// Its name.
    pub name: String,
    /// How it lies across the parts.
    pub spread: Spread,
    /// Cells (values per slot).
    pub cells: usize,
}

/// The lengths of one state's arrays that depend on which cells it covers (the fields follow
/// from its x planes): a part's, or the whole's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateShape {
    /// Its arrays, by name in increasing order.
    pub arrays: Vec<ArrayShape>,
}

impl StateShape {
    /// The shape of `state`.
    pub fn of<T: Real>(state: &State<T>) -> Self {
        StateShape {
            arrays: state
                .arrays
                .iter()
                .map(|a| ArrayShape {
                    name: a.name.clone(),
                    spread: a.spread,
                    cells: a.cells(),
                })
                .collect(),
        }
    }

    /// The whole state's shape from the shapes of its parts, in x order: the union of their
    /// arrays by name, the cells of a per-cell array added up, a shared one's the first
    /// part's that holds it.
    pub fn whole(parts: &[StateShape]) -> Self {
        let mut w = StateShape::default();
        for a in parts.iter().flat_map(|p| &p.arrays) {
            match w.arrays.iter_mut().find(|b| b.name == a.name) {
                Some(b) if matches!(b.spread, Spread::Cells { .. }) => b.cells += a.cells,
                Some(_) => {}
                None => w.arrays.push(a.clone()),
            }
        }
        w.arrays.sort_by(|a, b| a.name.cmp(&b.name));
        w
    }

    /// The cells of array `name` (0 when the shape lacks it).
    pub fn cells(&self, name: &str) -> usize {
        self.arrays
            .iter()
            .find(|a| a.name == name)
            .map_or(0, |a| a.cells)
    }

    /// Where part `index` of `parts` (in x order, starting at x plane `x0`) lies in the whole.
    pub fn place(parts: &[StateShape], index: usize, x0: usize) -> StatePlace {
        let before = &parts[..index];
        let offsets = parts[index]
            .arrays
            .iter()
            .map(|a| match a.spread {
                Spread::Cells { .. } => before.iter().map(|p| p.cells(&a.name)).sum(),
                Spread::Shared => 0,
            })
            .collect();
        StatePlace { x0, offsets }
    }
}

/// Where one part of a state lies in the whole: the offsets of its runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatePlace {
    /// The part's first x plane.
    pub x0: usize,
    /// Per array of the part (its order): the first cell of its run in the whole (0 for a
    /// shared array).
    pub offsets: Vec<usize>,
}

impl StatePlace {
    /// The place of a state that is the whole (every offset 0).
    pub fn whole<T: Real>(state: &State<T>) -> Self {
        StatePlace {
            x0: 0,
            offsets: vec![0; state.arrays.len()],
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
        let arrays = part
            .arrays
            .iter()
            .zip(&self.offsets)
            .map(|(a, &at)| ArrayRequest {
                name: a.name.clone(),
                spread: a.spread,
                cells: at..at + a.cells,
                total: whole.cells(&a.name),
            })
            .collect();
        StateRequest { x, arrays, flux }
    }
}

/// The run of one array a process reads ([`StateRequest`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayRequest {
    /// The array's name.
    pub name: String,
    /// How it lies across the parts.
    pub spread: Spread,
    /// Its cells' run in the whole (all of a shared array).
    pub cells: Range<usize>,
    /// The whole array's cells (the stride of its slots).
    pub total: usize,
}

impl ArrayRequest {
    /// The same run `shift` cells further on, of a whole of `total` cells: a process's own
    /// count moved to where its part lies (a shared array stays as it is).
    pub fn shifted(&self, shift: usize, total: usize) -> ArrayRequest {
        match self.spread {
            Spread::Cells { .. } => ArrayRequest {
                cells: self.cells.start + shift..self.cells.end + shift,
                total,
                ..self.clone()
            },
            Spread::Shared => self.clone(),
        }
    }

    /// The ranges of values to read from the whole array, slot by slot.
    pub fn runs(&self) -> Vec<Range<usize>> {
        (0..self.spread.slots())
            .map(|slot| slot * self.total + self.cells.start..slot * self.total + self.cells.end)
            .collect()
    }
}

/// The part of a whole state one process reads on resuming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateRequest {
    /// Its x planes (of the fields).
    pub x: Range<usize>,
    /// The runs of the arrays it holds.
    pub arrays: Vec<ArrayRequest>,
    /// Whether it holds the surface DFTs (the process that accumulates them).
    pub flux: bool,
}

impl StateRequest {
    /// A request for the fields of x planes `x` alone.
    pub fn fields(x: Range<usize>) -> Self {
        StateRequest {
            x,
            arrays: Vec::new(),
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
        for r in &request.arrays {
            let Some(a) = self.array(&r.name) else {
                continue;
            };
            part.arrays.push(StateArray {
                name: r.name.clone(),
                spread: r.spread,
                values: r
                    .runs()
                    .into_iter()
                    .flat_map(|run| &a.values[run])
                    .copied()
                    .collect(),
            });
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
    /// The slab's registered arrays, in the order of its shape.
    Rest(Box<State<T>>),
}

/// Load a whole state into an engine part by part, so that host memory holds one part at a
/// time: for each slab in x order (`slabs`: its x range and its [`StateShape`]), its fields in
/// parts of at most `planes_per_part` planes of `plane` cells, then its registered arrays,
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
    for (j, (x, shape)) in slabs.iter().enumerate() {
        let n = x.len();
        for a in (0..n).step_by(planes_per_part.max(1)) {
            let planes = a..(a + planes_per_part.max(1)).min(n);
            let part = read(&StateRequest::fields(
                x.start + planes.start..x.start + planes.end,
            ))?;
            for f in &part.fields {
                if f.len() != planes.len() * plane {
                    return Err(format!(
                        "the saved fields hold {} values where this run holds {}",
                        f.len(),
                        planes.len() * plane
                    ));
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
        let part = read(&place.request(x.start..x.start, shape, &whole, false))?;
        if let Some(why) = mismatch(&StateShape::of(&part), shape) {
            return Err(why);
        }
        load(j, Loaded::Rest(Box::new(part)))?;
    }
    read(&StateRequest::surface_dfts())
}

/// Why a saved state's arrays of shape `got` do not fit the arrays of shape `want`, if not.
pub fn mismatch(got: &StateShape, want: &StateShape) -> Option<String> {
    for w in &want.arrays {
        match got.arrays.iter().find(|g| g.name == w.name) {
            None => return Some(format!("the saved state lacks `{}`", w.name)),
            Some(g) if g.spread != w.spread || g.cells != w.cells => {
                return Some(format!(
                    "the saved `{}` holds {} values where this run holds {}",
                    w.name,
                    g.cells * g.spread.slots(),
                    w.cells * w.spread.slots()
                ))
            }
            Some(_) => {}
        }
    }
    got.arrays
        .iter()
        .find(|g| !want.arrays.iter().any(|w| w.name == g.name))
        .map(|g| {
            format!(
                "the saved state holds `{}`, which this run does not keep",
                g.name
            )
        })
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
    plane: usize,
    /// The first x plane of the pieces (that of the engine's first slab).
    x0: Option<usize>,
    /// Per array: whether a shared one was filled already.
    filled: Vec<bool>,
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
        self.state.arrays = whole
            .arrays
            .iter()
            .map(|a| StateArray {
                name: a.name.clone(),
                spread: a.spread,
                values: vec![T::ZERO; a.cells * a.spread.slots()],
            })
            .collect();
        self.filled = vec![false; whole.arrays.len()];
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
        for (a, &at) in part.arrays.iter().zip(&place.offsets) {
            let i = self
                .state
                .arrays
                .iter()
                .position(|w| w.name == a.name)
                .ok_or_else(|| format!("a piece of `{}`, which the whole state lacks", a.name))?;
            let whole = &mut self.state.arrays[i];
            match a.spread {
                Spread::Cells { slots } => {
                    let (n, total) = (a.cells(), whole.cells());
                    for slot in 0..slots {
                        whole.values[slot * total + at..][..n]
                            .copy_from_slice(&a.values[slot * n..(slot + 1) * n]);
                    }
                }
                Spread::Shared if !self.filled[i] => {
                    whole.values.clone_from(&a.values);
                    self.filled[i] = true;
                }
                Spread::Shared => {}
            }
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

    fn shape(arrays: &[(&str, Spread, usize)]) -> StateShape {
        StateShape {
            arrays: arrays
                .iter()
                .map(|&(name, spread, cells)| ArrayShape {
                    name: name.into(),
                    spread,
                    cells,
                })
                .collect(),
        }
    }

    #[test]
    fn parts_are_placed_after_the_parts_before_them() {
        let one = Spread::Cells { slots: 1 };
        let two = Spread::Cells { slots: 2 };
        let a = shape(&[("a", one, 3), ("b", two, 4)]);
        let b = shape(&[
            ("a", one, 7),
            ("b", two, 10),
            ("c", two, 6),
            ("d", Spread::Shared, 9),
        ]);
        let parts = [a.clone(), b.clone()];
        let w = StateShape::whole(&parts);
        assert_eq!(
            w,
            shape(&[
                ("a", one, 10),
                ("b", two, 14),
                ("c", two, 6),
                ("d", Spread::Shared, 9)
            ])
        );
        let p = StateShape::place(&parts, 1, 20);
        assert_eq!(p.x0, 20);
        assert_eq!(p.offsets, vec![3, 4, 0, 0]);
        let r = p.request(20..30, &b, &w, false);
        assert_eq!(r.arrays[1].cells, 4..14);
        assert_eq!(r.arrays[1].runs(), vec![4..14, 18..28]);
        assert_eq!(r.arrays[3].runs(), vec![0..9]);
        assert!(!r.flux);
        assert_eq!(mismatch(&b, &b), None);
        assert!(mismatch(&a, &b)
            .unwrap()
            .contains("`a` holds 3 values where this run holds 7"));
    }

    #[test]
    fn an_assembled_state_reads_back_part_by_part() {
        let arrays = |n0: usize, shared: bool| {
            let mut v = vec![StateArray {
                name: "p".into(),
                spread: Spread::Cells { slots: 2 },
                values: (0..2 * n0).map(|i| (n0 * 100 + i) as f64).collect(),
            }];
            if shared {
                v.push(StateArray {
                    name: "s".into(),
                    spread: Spread::Shared,
                    values: vec![7.0, 8.0],
                });
            }
            v
        };
        let parts = [
            State::<f64> {
                arrays: arrays(2, false),
                ..Default::default()
            },
            State::<f64> {
                arrays: arrays(3, true),
                ..Default::default()
            },
        ];
        let shapes: Vec<StateShape> = parts.iter().map(StateShape::of).collect();
        let mut asm = Assembler::<f64>::new(1);
        asm.begin(&StateShape::whole(&shapes)).unwrap();
        for (i, p) in parts.iter().enumerate() {
            asm.part(p, &StateShape::place(&shapes, i, 0)).unwrap();
        }
        let whole = asm.into_state(0);
        let p = whole.array("p").unwrap();
        assert_eq!(
            p.values,
            [200.0, 201.0, 300.0, 301.0, 302.0, 202.0, 203.0, 303.0, 304.0, 305.0]
        );
        for (i, part) in parts.iter().enumerate() {
            let place = StateShape::place(&shapes, i, 0);
            let req = place.request(0..0, &shapes[i], &StateShape::whole(&shapes), false);
            assert_eq!(&whole.part(&req, 0, 1).arrays, &part.arrays);
        }
    }
}
