//! The incident column of a diffraction monitor: the monitor's source alone in a column of its
//! medium, whose flux is the incident power the orders are fractions of.

use super::{Boundaries, Diffraction, Flux, Grid, Model, Object, Patch, Precision, Shape};

impl Model {
    /// The column that measures diffraction monitor `d`'s incident power: this model's grid
    /// along the monitor's normal, at most two cells across each other axis (one where the
    /// cell has one), every cell the material at the source's sheet, the source alone with
    /// the same transverse wavevector (the Bloch phases scaled to the column's periods), and
    /// one flux plane two cells ahead of the sheet with the monitor's frequencies and
    /// decimation, and, for a monitor counting power back towards the source, a second one
    /// with its DFT fields at the monitor's own plane (the source's direct field there). Its flux along the wave, times the ratio of the cross-sections
    /// ([`Model::column_area_ratio`]), is the power the wave brings into the whole cell, on the
    /// same grid and time step: the normalisation run of a Meep user, made for them.
    pub fn incident_column(&self, flux: &Flux, d: &Diffraction) -> Model {
        let g = &self.grid;
        let a = flux.patches[0].axis as usize;
        let mut shape = g.shape;
        let mut lines = g.lines.clone();
        for t in (0..3).filter(|&t| t != a) {
            shape[t] = g.shape[t].min(2);
            lines[t] = None;
        }
        let grid = Grid {
            shape,
            lines,
            ..g.clone()
        };
        let mut boundaries = Boundaries::on_grid(self.boundaries.faces, &grid);
        boundaries.bloch =
            [0, 1, 2].map(|t| self.boundaries.bloch[t] * shape[t] as f64 / g.shape[t] as f64);
        let s = &self.sources[d.source];
        let centre = s.cells.map(|r| ((r[0] + r[1] - 1) / 2) as f64);
        let at = g.position(s.component, centre);
        let material = self
            .objects
            .iter()
            .rev()
            .find(|o| o.contains(at))
            .map_or(0, |o| o.material);
        let mut source = s.clone();
        for t in (0..3).filter(|&t| t != a) {
            source.cells[t] = [0, shape[t]];
            if let Some(m) = &mut source.magnetic {
                m.cells[t] = [0, shape[t]];
            }
        }
        let behind = source.magnetic.as_ref().map_or(0, |m| m.cells[a][0]);
        let ahead = if behind < s.cells[a][0] {
            (s.cells[a][0] + 2).min(shape[a] - 1)
        } else {
            s.cells[a][0].saturating_sub(2)
        };
        let [p, q] = flux.patches[0].in_plane();
        let plane = Flux {
            name: "incident".into(),
            patches: vec![Patch {
                count: [shape[p], shape[q]],
                start: [0, 0],
                index: ahead,
                sign: 1.0,
                closed: false,
                axis: flux.patches[0].axis,
            }],
            frequencies: flux.frequencies.clone(),
            fields: false,
            far_field: None,
            decimation: flux.decimation,
            mode: None,
            diffraction: None,
        };
        let mut fluxes = vec![plane.clone()];
        if d.toward * (ahead as f64 - behind as f64) < 0.0 {
            let mut own = plane;
            own.name = "direct".into();
            own.patches[0].index = flux.patches[0].index;
            own.fields = true;
            fluxes.push(own);
        }
        let size = grid.size();
        let fill = (material != 0).then(|| Object {
            shape: Shape::Box {
                size: size.map(|s| 4.0 * s),
            },
            center: [0, 1, 2].map(|t| grid.origin[t] + size[t] / 2.0),
            material,
            geometry: 0,
        });
        Model {
            name: format!("{}-incident", self.name),
            grid,
            precision: Precision::F64,
            objects: fill.into_iter().collect(),
            smoothing: None,
            boundaries,
            sources: vec![source],
            tfsf: None,
            probes: Vec::new(),
            snapshots: Vec::new(),
            fluxes,
            dispersive_counts: Default::default(),
            conformal: Default::default(),
            conformal_estimate: Default::default(),
            conformal_reduced: false,
            scan: None,
            sparameters: None,
            terminals: Vec::new(),
            cell_passes: Vec::new(),
            imaginary: false,
            ..self.clone()
        }
    }

    /// The cross-section of this model over that of its incident `column` across axis `a`.
    pub fn column_area_ratio(&self, column: &Model, a: usize) -> f64 {
        let (big, small) = (self.grid.size(), column.grid.size());
        (0..3)
            .filter(|&t| t != a)
            .map(|t| big[t] / small[t])
            .product()
    }
}
