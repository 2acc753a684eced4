//! Objects thinner than a cell.
//!
//! The painter gives an E component the material of the last object holding its Yee point
//! (the midpoint of its grid edge), and the smoothing mixes materials over the component's
//! cell from samples. Both can miss an object thinner than a cell: a copper foil, a patch, a
//! ground plane, a wire. So:
//!
//! - A PEC object thinner than a cell along an axis is put on the grid ([`place_pec`]): the
//!   extent is made zero and moved onto the node plane nearest to its centre, where it holds
//!   the tangential E components within its other extents (a sheet); thin along two axes, it
//!   holds the E components along the grid edge nearest to it (a line); a thin slanted
//!   cylinder holds the staircase of grid edges nearest to its axis (a wire). A component held
//!   by PEC is never smoothed.
//! - Around a dielectric thinner than a cell, the smoothing integrates the exact chord of every
//!   object along the thin axis instead of sampling points ([`ThinRegion`]), so the film keeps
//!   its fill fraction even when it paints no Yee point at all.

use super::geometry::{Object, Shape};
use super::grid::{Component, Grid};

/// A sheet, line or wire that moved onto the grid along `axis`: from `from` to `to` (m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Move {
    /// The axis it moved along.
    pub axis: usize,
    /// Its centre before (m).
    pub from: f64,
    /// Its centre after: a node coordinate (m).
    pub to: f64,
    /// The distance in cells of the local grid.
    pub cells: f64,
}

/// What [`place_pec`] made of a PEC object.
#[derive(Debug, Clone, PartialEq)]
pub enum Placed {
    /// Thick along every axis (or small along all three: a point holds only the Yee points it
    /// contains): painted as it is.
    AsDrawn,
    /// Zero extent along the listed axes, on node planes; `moves` says where it went.
    OnGrid {
        /// The axes along which it is thinner than a cell.
        thin: Vec<usize>,
        /// The moves of more than rounding.
        moves: Vec<Move>,
    },
    /// A thin slanted cylinder: this many grid edges in straight runs, one object each.
    Wire {
        /// Grid edges the wire holds.
        edges: usize,
        /// The node coordinates (m) of the path's two ends.
        ends: [[f64; 3]; 2],
    },
}

/// The local cell size (m) along `axis` at coordinate `x`.
fn cell_at(g: &Grid, axis: usize, x: f64) -> f64 {
    let i = g.fractional_index(axis, x).floor() as isize;
    g.primal(axis, i)
}

/// The node nearest to coordinate `x` along `axis` (0..=n), the last node of a periodic axis
/// being the first.
fn nearest_node(g: &Grid, axis: usize, x: f64, periodic: bool) -> usize {
    let n = g.shape[axis];
    let i = (g.fractional_index(axis, x).round().max(0.0) as usize).min(n);
    if periodic && i == n {
        0
    } else {
        i
    }
}

/// Put a PEC object that is thinner than a cell on the grid (see the module doc), as one or
/// more objects to paint in its place.
pub fn place_pec(g: &Grid, object: &Object, periodic: [bool; 3]) -> (Vec<Object>, Placed) {
    match &object.shape {
        Shape::Box { size } => place_box(g, object, *size, periodic),
        Shape::Cylinder {
            radius,
            height,
            axis,
        } => {
            let along = (0..3).find(|&a| axis[a].abs() == 1.0);
            let diameter = 2.0 * radius;
            match along {
                // Along a grid axis: thin across it, the cylinder becomes a strip or a line
                // (its round cross-section taken as its diameter on a thick transverse axis).
                Some(b) => {
                    let thin_across =
                        (0..3).any(|t| t != b && diameter < cell_at(g, t, object.center[t]));
                    if thin_across {
                        let mut size = [diameter; 3];
                        size[b] = *height;
                        return place_box(g, object, size, periodic);
                    }
                    if *height < cell_at(g, b, object.center[b]) {
                        let (center, moves) = snap(g, object.center, &[b], periodic);
                        let disc = Object {
                            shape: Shape::Cylinder {
                                radius: *radius,
                                height: 0.0,
                                axis: *axis,
                            },
                            center,
                            ..object.clone()
                        };
                        return (
                            vec![disc],
                            Placed::OnGrid {
                                thin: vec![b],
                                moves,
                            },
                        );
                    }
                    (vec![object.clone()], Placed::AsDrawn)
                }
                None => {
                    let cells = [0, 1, 2].map(|a| cell_at(g, a, object.center[a]));
                    let smallest = cells.iter().copied().fold(f64::INFINITY, f64::min);
                    let longest = cells.iter().copied().fold(0.0, f64::max);
                    if diameter < smallest && *height >= longest {
                        wire(g, object, *height, *axis, periodic)
                    } else {
                        (vec![object.clone()], Placed::AsDrawn)
                    }
                }
            }
        }
        Shape::Prism(prism) => {
            // Thinner than a cell along its axis: a sheet on the nearest node plane.
            let a = prism.axis;
            let middle = 0.5 * (prism.span[0] + prism.span[1]);
            if prism.span[1] - prism.span[0] >= cell_at(g, a, middle) {
                return (vec![object.clone()], Placed::AsDrawn);
            }
            let mut at = object.center;
            at[a] = middle;
            let (center, moves) = snap(g, at, &[a], periodic);
            let sheet = Object {
                shape: Shape::Prism(std::sync::Arc::new(prism.with_span([center[a], center[a]]))),
                center,
                ..object.clone()
            };
            (
                vec![sheet],
                Placed::OnGrid {
                    thin: vec![a],
                    moves,
                },
            )
        }
        Shape::Sphere { .. } | Shape::Mesh(_) | Shape::Voxels { .. } => {
            (vec![object.clone()], Placed::AsDrawn)
        }
    }
}

/// A box of `size` (the object's own, or a cylinder's strip) with its thin extents made zero
/// and put on node planes.
fn place_box(
    g: &Grid,
    object: &Object,
    mut size: [f64; 3],
    periodic: [bool; 3],
) -> (Vec<Object>, Placed) {
    let thin: Vec<usize> = (0..3)
        .filter(|&a| size[a] < cell_at(g, a, object.center[a]))
        .collect();
    if thin.is_empty() || thin.len() == 3 {
        return (vec![object.clone()], Placed::AsDrawn);
    }
    for &a in &thin {
        size[a] = 0.0;
    }
    let (center, moves) = snap(g, object.center, &thin, periodic);
    let placed = Object {
        shape: Shape::Box { size },
        center,
        ..object.clone()
    };
    (vec![placed], Placed::OnGrid { thin, moves })
}

/// `center` moved onto the nearest node plane along each of `axes`, with the moves of more
/// than rounding (1e-6 of a cell).
fn snap(
    g: &Grid,
    mut center: [f64; 3],
    axes: &[usize],
    periodic: [bool; 3],
) -> ([f64; 3], Vec<Move>) {
    let mut moves = Vec::new();
    for &a in axes {
        let node = nearest_node(g, a, center[a], periodic[a]);
        // Exactly the coordinate the painter computes for a Yee point on that plane.
        let to = g.coordinate(a, node as f64);
        let cells = (g.fractional_index(a, to) - g.fractional_index(a, center[a])).abs();
        if cells > 1e-6 {
            moves.push(Move {
                axis: a,
                from: center[a],
                to,
                cells,
            });
        }
        center[a] = to;
    }
    (center, moves)
}

/// The staircase of grid edges nearest to a thin slanted cylinder's axis: its ends rounded to
/// nodes, and every node the axis passes nearest to joined by edges, one axis at a time; each
/// straight run of edges is one line.
fn wire(
    g: &Grid,
    object: &Object,
    height: f64,
    axis: [f64; 3],
    periodic: [bool; 3],
) -> (Vec<Object>, Placed) {
    let end = |s: f64| {
        [0, 1, 2].map(|a| {
            let x = object.center[a] + s * 0.5 * height * axis[a];
            g.fractional_index(a, x).clamp(0.0, g.shape[a] as f64)
        })
    };
    let (f0, f1) = (end(-1.0), end(1.0));
    let span = (0..3).map(|a| (f1[a] - f0[a]).abs()).fold(0.0, f64::max);
    let samples = (span * 8.0).ceil() as usize + 1;
    let mut nodes: Vec<[usize; 3]> = Vec::new();
    for s in 0..=samples {
        let t = s as f64 / samples as f64;
        let node = [0, 1, 2].map(|a| (f0[a] + t * (f1[a] - f0[a])).round() as usize);
        if nodes.last() != Some(&node) {
            nodes.push(node);
        }
    }
    // Edges as (lower node, axis), in path order.
    let mut edges: Vec<([usize; 3], usize)> = Vec::new();
    for w in nodes.windows(2) {
        let mut at = w[0];
        for a in 0..3 {
            while at[a] != w[1][a] {
                let next = if w[1][a] > at[a] {
                    at[a] + 1
                } else {
                    at[a] - 1
                };
                let mut lower = at;
                lower[a] = at[a].min(next);
                edges.push((lower, a));
                at[a] = next;
            }
        }
    }
    let mut runs: Vec<([usize; 3], usize, usize)> = Vec::new();
    for (lower, a) in edges.iter().copied() {
        match runs.last_mut() {
            Some((start, axis, count))
                if *axis == a
                    && (0..3).all(|b| b == a || start[b] == lower[b])
                    && (lower[a] + 1 == start[a] || lower[a] == start[a] + *count) =>
            {
                start[a] = start[a].min(lower[a]);
                *count += 1;
            }
            _ => runs.push((lower, a, 1)),
        }
    }
    let coordinate = |a: usize, i: usize| {
        let i = if periodic[a] && i == g.shape[a] { 0 } else { i };
        g.coordinate(a, i as f64)
    };
    let objects = runs
        .iter()
        .map(|&(start, a, count)| {
            let mut center = [0, 1, 2].map(|b| coordinate(b, start[b]));
            let mut size = [0.0; 3];
            let far = g.coordinate(a, (start[a] + count) as f64);
            size[a] = far - center[a];
            center[a] += 0.5 * size[a];
            Object {
                shape: Shape::Box { size },
                center,
                ..object.clone()
            }
        })
        .collect();
    let first = nodes.first().copied().unwrap_or_default();
    let last = nodes.last().copied().unwrap_or_default();
    let ends = [first, last].map(|n| [0, 1, 2].map(|a| coordinate(a, n[a])));
    (
        objects,
        Placed::Wire {
            edges: edges.len(),
            ends,
        },
    )
}

/// How many Yee points of E component `c` object `o` holds (paints, for a material), or None
/// when its index box has more than `limit` points (then it holds many: counting would take
/// long). A box is counted axis by axis, any size.
pub fn points_inside(g: &Grid, o: &Object, c: Component, limit: u64) -> Option<u64> {
    let off = c.offset();
    let (lo, hi) = o.bounds();
    let range = |a: usize| {
        let n = g.shape[a] as f64;
        let first = (g.fractional_index(a, lo[a]) - off[a] - 1e-6)
            .ceil()
            .max(0.0);
        let last = ((g.fractional_index(a, hi[a]) - off[a] + 1e-6).floor() + 1.0).clamp(0.0, n);
        (first as usize, (last as usize).max(first as usize))
    };
    let ranges = [0, 1, 2].map(range);
    let position = |a: usize, i: usize| g.coordinate(a, i as f64 + off[a]);
    if let Shape::Box { .. } = o.shape {
        // The box test is separable: the points inside are a product of per-axis counts.
        let per_axis = [0, 1, 2].map(|a| {
            let mut p = o.center;
            (ranges[a].0..ranges[a].1)
                .filter(|&i| {
                    p[a] = position(a, i);
                    o.contains(p)
                })
                .count() as u64
        });
        return Some(per_axis.iter().product());
    }
    use rayon::prelude::*;
    let along =
        |a: usize| -> Vec<f64> { (ranges[a].0..ranges[a].1).map(|i| position(a, i)).collect() };
    // A mesh and a prism count whole columns at once (one ray, one in-plane test each): any
    // size, as a box.
    match &o.shape {
        Shape::Mesh(mesh) => {
            let zs = along(2);
            let count = (ranges[0].0..ranges[0].1)
                .into_par_iter()
                .map(|i| {
                    (ranges[1].0..ranges[1].1)
                        .map(|j| {
                            let spans = mesh.spans([position(0, i), position(1, j), 0.0], 2);
                            zs.iter()
                                .filter(|&&z| spans.iter().any(|&(a, b)| a <= z && z <= b))
                                .count() as u64
                        })
                        .sum::<u64>()
                })
                .sum();
            return Some(count);
        }
        Shape::Prism(prism) => {
            let a = prism.axis;
            let [u, v] = super::prism::Prism::plane_axes(a);
            let heights = along(a);
            let vs = along(v);
            let count = (ranges[u].0..ranges[u].1)
                .into_par_iter()
                .map(|i| {
                    let pu = position(u, i);
                    vs.iter()
                        .map(|&pv| prism.column_count([pu, pv], &heights) as u64)
                        .sum::<u64>()
                })
                .sum();
            return Some(count);
        }
        _ => {}
    }
    let total: u64 = ranges.iter().map(|r| (r.1 - r.0) as u64).product();
    if total > limit {
        return None;
    }
    let count = (ranges[0].0..ranges[0].1)
        .into_par_iter()
        .map(|i| {
            let mut count = 0;
            for j in ranges[1].0..ranges[1].1 {
                for k in ranges[2].0..ranges[2].1 {
                    count += o.contains([position(0, i), position(1, j), position(2, k)]) as u64;
                }
            }
            count
        })
        .sum();
    Some(count)
}

/// How many Yee points of Ex, Ey and Ez the `pieces` of one `[[geometry]]` entry hold
/// ([`points_inside`] summed), or None when one piece's index box has more than `limit`
/// points.
pub fn e_points_inside(g: &Grid, pieces: &[&Object], limit: u64) -> Option<u64> {
    pieces.iter().try_fold(0u64, |sum, o| {
        [Component::Ex, Component::Ey, Component::Ez]
            .iter()
            .try_fold(sum, |s, &c| points_inside(g, o, c, limit).map(|n| s + n))
    })
}

/// The cells of one E component around a non-PEC object thinner than a cell, whose smoothing
/// integrates along `axis` (the object's thinnest) instead of sampling points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThinRegion {
    /// The first and one-past-last index of the component's cells along each axis whose cell
    /// overlaps the object's bounds.
    pub cells: [[usize; 2]; 3],
    /// The axis along which the object is thinner than a cell.
    pub axis: usize,
    /// Its extent along `axis`, in cells.
    pub thickness: f64,
}

impl ThinRegion {
    /// The region of component `c`'s cells around object `o`, when `o` has a volume and is
    /// thinner than a cell along some axis.
    pub fn of(g: &Grid, o: &Object, c: Component) -> Option<ThinRegion> {
        if !o.has_volume() {
            return None;
        }
        let (lo, hi) = o.bounds();
        let thickness = [0, 1, 2].map(|a| (hi[a] - lo[a]) / cell_at(g, a, o.center[a]));
        let axis = (0..3)
            .filter(|&a| thickness[a] < 1.0)
            .min_by(|&a, &b| thickness[a].total_cmp(&thickness[b]))?;
        let off = c.offset();
        let cells = [0, 1, 2].map(|a| {
            let n = g.shape[a] as f64;
            // Cell i of the component spans fractional index i + off - 1/2 to i + off + 1/2.
            let first = (g.fractional_index(a, lo[a]) - off[a] - 0.5)
                .ceil()
                .clamp(0.0, n);
            let last = ((g.fractional_index(a, hi[a]) - off[a] + 0.5).floor() + 1.0).clamp(0.0, n);
            [first as usize, (last as usize).max(first as usize)]
        });
        Some(ThinRegion {
            cells,
            axis,
            thickness: thickness[axis],
        })
    }

    /// Whether cell `(i, j, k)` is in the region.
    pub fn holds(&self, index: [usize; 3]) -> bool {
        (0..3).all(|a| (self.cells[a][0]..self.cells[a][1]).contains(&index[a]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid::uniform([20, 20, 20], [1.0; 3], [-10.0; 3], 1e-9, 1)
    }

    fn pec(shape: Shape, center: [f64; 3]) -> Object {
        Object {
            shape,
            center,
            material: 1,
            geometry: 0,
        }
    }

    #[test]
    fn a_foil_becomes_a_sheet_on_the_nearest_node_plane() {
        let foil = pec(
            Shape::Box {
                size: [6.0, 6.0, 0.07],
            },
            [0.3, 0.0, 2.3],
        );
        let (placed, how) = place_pec(&grid(), &foil, [false; 3]);
        assert_eq!(
            placed[0].shape,
            Shape::Box {
                size: [6.0, 6.0, 0.0]
            }
        );
        assert_eq!(placed[0].center, [0.3, 0.0, 2.0]);
        let Placed::OnGrid { thin, moves } = how else {
            panic!("{how:?}")
        };
        assert_eq!(thin, vec![2]);
        assert_eq!(moves.len(), 1);
        assert!((moves[0].cells - 0.3).abs() < 1e-12);
        // The tangential components on the plane within the sheet (x from -2.7 to 3.3, y from
        // -3 to 3): Ex at x = -2.5..2.5 and y = -3..3, Ey at x = -2..3 and y = -2.5..2.5.
        let g = grid();
        assert_eq!(points_inside(&g, &placed[0], Component::Ex, 0), Some(6 * 7));
        assert_eq!(points_inside(&g, &placed[0], Component::Ey, 0), Some(6 * 6));
        assert_eq!(points_inside(&g, &placed[0], Component::Ez, 0), Some(0));
        // Drawn as it was, the foil held nothing: it lies between node planes.
        assert_eq!(points_inside(&g, &foil, Component::Ex, 0), Some(0));
    }

    #[test]
    fn a_thin_cylinder_along_z_is_a_line_and_a_slanted_one_a_staircase() {
        let g = grid();
        let wire = Shape::Cylinder {
            radius: 0.05,
            height: 4.0,
            axis: [0.0, 0.0, 1.0],
        };
        let (placed, _) = place_pec(&g, &pec(wire, [0.2, -0.1, 0.0]), [false; 3]);
        assert_eq!(
            placed[0].shape,
            Shape::Box {
                size: [0.0, 0.0, 4.0]
            }
        );
        assert_eq!(points_inside(&g, &placed[0], Component::Ez, 0), Some(4));
        let s = 1.0 / 2f64.sqrt();
        let slanted = Shape::Cylinder {
            radius: 0.05,
            height: 6.0 * 2f64.sqrt(),
            axis: [s, 0.0, s],
        };
        let (runs, how) = place_pec(&g, &pec(slanted, [0.0; 3]), [false; 3]);
        let Placed::Wire { edges, ends } = how else {
            panic!("{how:?}")
        };
        // From node (-3, 0, -3) to (3, 0, 3): 6 edges along x and 6 along z, connected.
        assert_eq!(edges, 12);
        assert_eq!(ends, [[-3.0, 0.0, -3.0], [3.0, 0.0, 3.0]]);
        let held: u64 = runs
            .iter()
            .map(|o| {
                [Component::Ex, Component::Ey, Component::Ez]
                    .iter()
                    .map(|&c| points_inside(&g, o, c, 0).unwrap())
                    .sum::<u64>()
            })
            .sum();
        assert_eq!(held, 12);
    }

    #[test]
    fn thick_objects_and_non_boxes_stay_as_drawn() {
        let g = grid();
        let plate = pec(
            Shape::Box {
                size: [6.0, 6.0, 1.2],
            },
            [0.0; 3],
        );
        assert_eq!(place_pec(&g, &plate, [false; 3]).1, Placed::AsDrawn);
        let ball = pec(Shape::Sphere { radius: 0.2 }, [0.0; 3]);
        assert_eq!(place_pec(&g, &ball, [false; 3]).1, Placed::AsDrawn);
    }

    #[test]
    fn a_thin_film_between_planes_has_a_region_along_its_normal() {
        let g = grid();
        let film = pec(
            Shape::Box {
                size: [30.0, 30.0, 0.3],
            },
            [0.0, 0.0, 0.5],
        );
        let r = ThinRegion::of(&g, &film, Component::Ex).unwrap();
        assert_eq!(r.axis, 2);
        // Ex cells along z span [k - 1/2, k + 1/2] around node k = 10 + z: the film, from
        // z = 0.35 to 0.65, crosses the cells of nodes 10 and 11.
        assert_eq!(r.cells[2], [10, 12]);
        assert_eq!(r.cells[0], [0, 20]);
        let rz = ThinRegion::of(&g, &film, Component::Ez).unwrap();
        assert_eq!(rz.cells[2], [10, 11]);
    }
}
