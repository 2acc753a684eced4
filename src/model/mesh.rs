//! Mesh lines: the node coordinates of one graded axis from the refinement it must honour.
//!
//! A non-uniform mesh is a tensor product of three such axes ([`crate::model::Grid::lines`]).
//! [`axis_lines`] is the one place that turns "at most this cell size between these
//! coordinates" into nodes; the scene resolver calls it once per axis.

use super::{MaterialTable, Object, C0};

/// One refinement request along an axis: cells of at most `cell` (m) between `lo` and `hi` (m).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zone {
    /// Lower coordinate (m).
    pub lo: f64,
    /// Upper coordinate (m).
    pub hi: f64,
    /// The largest cell allowed inside (m).
    pub cell: f64,
}

/// The node coordinates (m) of an axis from `lo` to `hi`: cells of at most `background`, at
/// most each zone's cell inside that zone, neighbouring cells differing by at most the ratio
/// `grading` (> 1), and a node on every coordinate of `snaps` inside the axis (zone faces and
/// material interfaces) where the cell sizes allow.
///
/// The first value is `lo`, the last `hi`, and the values increase.
///
/// This version places a node on every zone face and snap point and fills each interval
/// between two of them with equal cells no larger than the smallest limit over it; it does not
/// yet bound the ratio of neighbouring cells (`grading` is accepted for the final contract).
pub fn axis_lines(
    lo: f64,
    hi: f64,
    background: f64,
    zones: &[Zone],
    _grading: f64,
    snaps: &[f64],
) -> Vec<f64> {
    let mut fixed: Vec<f64> = vec![lo, hi];
    for z in zones {
        fixed.extend([z.lo, z.hi]);
    }
    fixed.extend_from_slice(snaps);
    fixed.retain(|&x| x >= lo && x <= hi);
    fixed.sort_by(f64::total_cmp);
    // Points closer than a thousandth of the finest cell are one point.
    let finest = zones.iter().map(|z| z.cell).fold(background, f64::min);
    fixed.dedup_by(|b, a| (*b - *a).abs() < 1e-3 * finest);
    let mut nodes = vec![lo];
    for w in fixed.windows(2) {
        let (a, b) = (w[0], w[1]);
        let mid = 0.5 * (a + b);
        let limit = zones
            .iter()
            .filter(|z| z.lo <= mid && mid <= z.hi)
            .map(|z| z.cell)
            .fold(background, f64::min);
        let n = ((b - a) / limit * (1.0 - 1e-9)).ceil().max(1.0) as usize;
        for i in 1..=n {
            nodes.push(if i == n {
                b
            } else {
                a + (b - a) * i as f64 / n as f64
            });
        }
    }
    nodes
}

/// The refinement `simulation.cells_per_wavelength = per_wavelength` asks for, per axis: over
/// each object's bounding box, cells of at most the shortest wavelength in its material at
/// `f_max` (the highest source frequency) over `per_wavelength`, and at most a third of the
/// object's extent along the axis, so a thin layer gets at least three cells across. Zones no
/// finer than `background` are left out. PEC objects have no wavelength inside and get only
/// the thickness rule.
pub fn wavelength_zones(
    objects: &[Object],
    table: &MaterialTable,
    f_max: f64,
    per_wavelength: f64,
    background: [f64; 3],
) -> [Vec<Zone>; 3] {
    let mut zones: [Vec<Zone>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for o in objects {
        let m = &table.materials[o.material as usize];
        let by_wavelength = if m.pec || f_max <= 0.0 {
            f64::INFINITY
        } else {
            let n = (m.epsilon_at(f_max) * m.mu_at(f_max))
                .norm()
                .sqrt()
                .max(1.0);
            C0 / (f_max * n * per_wavelength)
        };
        let (lo, hi) = o.bounds();
        for a in 0..3 {
            let extent = hi[a] - lo[a];
            let by_thickness = if extent > 0.0 {
                extent / 3.0
            } else {
                f64::INFINITY
            };
            let cell = by_wavelength.min(by_thickness);
            if cell < background[a] * (1.0 - 1e-9) {
                zones[a].push(Zone {
                    lo: lo[a],
                    hi: hi[a],
                    cell,
                });
            }
        }
    }
    zones
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cells respect every limit, and zone faces are nodes.
    #[test]
    fn lines_honour_the_limits() {
        let zones = [Zone {
            lo: -0.1,
            hi: 0.1,
            cell: 0.01,
        }];
        let l = axis_lines(-1.0, 1.0, 0.1, &zones, 1.25, &[0.35]);
        assert_eq!(l[0], -1.0);
        assert_eq!(*l.last().unwrap(), 1.0);
        for w in l.windows(2) {
            let h = w[1] - w[0];
            let mid = 0.5 * (w[0] + w[1]);
            let limit = if mid.abs() < 0.1 { 0.01 } else { 0.1 };
            assert!(h > 0.0 && h <= limit * (1.0 + 1e-9), "{w:?}");
        }
        for x in [-0.1, 0.1, 0.35] {
            assert!(l.iter().any(|&v| (v - x).abs() < 1e-12), "{x}");
        }
    }
}
