//! Material grids: a box divided into voxels, each holding a small integer that names one of a
//! list of materials. The grid becomes one object per value (each holding the voxels of that
//! value), so that the painter, the smoothing and the warnings treat it as any other objects.
//!
//! A point on the face between two voxels belongs to the one with the higher index along each
//! axis, and one on the grid's outer faces to the grid (within 1e-9 of its size, as for a box):
//! the voxels paint as boxes listed in increasing index order would, each over the ones
//! before it.

/// A material grid over a box.
#[derive(Debug, Clone, PartialEq)]
pub struct VoxelGrid {
    /// The box's corners (m).
    pub lo: [f64; 3],
    /// The opposite corner (m).
    pub hi: [f64; 3],
    /// Voxels along x, y, z.
    pub shape: [usize; 3],
    /// The values, C order (x outermost).
    pub values: Vec<u16>,
}

impl VoxelGrid {
    /// The value at point `p`, or None outside the box.
    pub fn value_at(&self, p: [f64; 3]) -> Option<u16> {
        let mut idx = [0usize; 3];
        for a in 0..3 {
            let size = self.hi[a] - self.lo[a];
            let u = (p[a] - self.lo[a]) / size * self.shape[a] as f64;
            let n = self.shape[a] as f64;
            // Within the box to 1e-9 of its size; a face between voxels to the higher index.
            if u < -1e-9 * n || u > n * (1.0 + 1e-9) {
                return None;
            }
            idx[a] = ((u + 1e-9).floor().max(0.0) as usize).min(self.shape[a] - 1);
        }
        Some(self.values[(idx[0] * self.shape[1] + idx[1]) * self.shape[2] + idx[2]])
    }

    /// The bounding box (min, max) of the voxels holding each value below `values`, or None
    /// for a value no voxel holds: one pass over the grid.
    pub fn bounds_by_value(&self, values: usize) -> Vec<Option<([f64; 3], [f64; 3])>> {
        let [nx, ny, nz] = self.shape;
        let mut lo = vec![[usize::MAX; 3]; values];
        let mut hi = vec![[0usize; 3]; values];
        for i in 0..nx {
            for j in 0..ny {
                for k in 0..nz {
                    let v = self.values[(i * ny + j) * nz + k] as usize;
                    if v >= values {
                        continue;
                    }
                    for (a, x) in [i, j, k].into_iter().enumerate() {
                        lo[v][a] = lo[v][a].min(x);
                        hi[v][a] = hi[v][a].max(x + 1);
                    }
                }
            }
        }
        let at = |a: usize, x: usize| {
            self.lo[a] + (self.hi[a] - self.lo[a]) * x as f64 / self.shape[a] as f64
        };
        (0..values)
            .map(|v| {
                (lo[v][0] != usize::MAX).then(|| {
                    (
                        [0, 1, 2].map(|a| at(a, lo[v][a])),
                        [0, 1, 2].map(|a| at(a, hi[v][a])),
                    )
                })
            })
            .collect()
    }
}
