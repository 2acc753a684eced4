//! The incident column of a diffraction monitor: the monitor's source alone in a column of its
//! medium, whose flux is the incident power the orders are fractions of.

use super::{
    Boundaries, Component, Diffraction, Flux, Grid, Model, Object, Patch, Precision, Shape,
};

impl Model {
    /// The column that measures diffraction monitor `d`'s incident power: this model's grid
    /// along the monitor's normal (the column's z), at most two cells across each other axis (one where the
    /// cell has one), every cell the material at the source's sheet, the source alone (with its
    /// partner sheet, [`crate::model::Source::partner`]) with
    /// the same transverse wavevector (the Bloch phases scaled to the column's periods), and
    /// one flux plane two cells ahead of the sheet with the monitor's frequencies and
    /// decimation, and, for a monitor counting power back towards the source, a second one
    /// with its DFT fields at the monitor's own plane (the source's direct field there). Its flux along the wave, times the ratio of the cross-sections
    /// ([`Model::column_area_ratio`]), is the power the wave brings into the whole cell, on the
    /// same grid and time step: the normalisation run of a Meep user, made for them.
    pub fn incident_column(&self, flux: &Flux, d: &Diffraction) -> Model {
        let g = &self.grid;
        let a = flux.patches[0].axis as usize;
        // The column's axes are this model's turned cyclically (the curl keeps its form) so
        // that the monitor's normal is z: its long axis is then the contiguous one, and the
        // update steps two x planes of long rows instead of many planes of a few cells.
        let to = |t: usize| (t + 5 - a) % 3;
        let turn3 = |v: [f64; 3]| {
            let mut out = [0.0; 3];
            for t in 0..3 {
                out[to(t)] = v[t];
            }
            out
        };
        let mut shape = [0; 3];
        let mut lines: [Option<Vec<f64>>; 3] = Default::default();
        let mut faces = self.boundaries.faces;
        for t in 0..3 {
            shape[to(t)] = if t == a {
                g.shape[t]
            } else {
                g.shape[t].min(2)
            };
            lines[to(t)] = if t == a { g.lines[t].clone() } else { None };
            faces[to(t)] = self.boundaries.faces[t];
        }
        let grid = Grid {
            shape,
            lines,
            cell: turn3(g.cell),
            origin: turn3(g.origin),
            ..g.clone()
        };
        let mut boundaries = Boundaries::on_grid(faces, &grid);
        boundaries.bloch = turn3(
            [0, 1, 2].map(|t| self.boundaries.bloch[t] * shape[to(t)] as f64 / g.shape[t] as f64),
        );
        let s = &self.sources[d.source];
        // The medium at the sheet's centre, the one its impedance was taken from.
        let [i, j, k] = s.cells.map(|r| (r[0] + r[1] - 1) / 2);
        let material = self.material_at(s.component, i, j, k);
        let turn_component = |c: Component| {
            let i = Component::ALL
                .iter()
                .position(|&k| k == c)
                .expect("a component");
            Component::ALL[3 * (i / 3) + to(i % 3)]
        };
        let turn_cells = |cells: [[usize; 2]; 3]| {
            let mut out = [[0, 0]; 3];
            for t in 0..3 {
                out[to(t)] = if t == a { cells[t] } else { [0, shape[to(t)]] };
            }
            out
        };
        // The wave's sheets: the source, and its partner when its E lies along both in-plane
        // axes (conical incidence).
        let partner = self.sources.get(d.source + 1).filter(|p| p.partner);
        let sources: Vec<_> = std::iter::once(s)
            .chain(partner)
            .map(|s| {
                let mut source = s.clone();
                source.component = turn_component(s.component);
                source.cells = turn_cells(s.cells);
                source.transverse_k = s.transverse_k.map(turn3);
                if let Some(m) = &mut source.magnetic {
                    m.component = turn_component(m.component);
                    m.cells = turn_cells(m.cells);
                }
                source
            })
            .collect();
        let sign = s.travel_sign(a).unwrap_or(1.0);
        let ahead = if sign > 0.0 {
            (s.cells[a][0] + 2).min(g.shape[a] - 1)
        } else {
            s.cells[a][0].saturating_sub(2)
        };
        let plane = Flux {
            name: "incident".into(),
            patches: vec![Patch {
                count: [shape[0], shape[1]],
                start: [0, 0],
                index: ahead,
                sign: 1.0,
                closed: false,
                axis: super::Axis::Z,
            }],
            frequencies: flux.frequencies.clone(),
            fields: false,
            far_field: None,
            decimation: flux.decimation,
            mode: None,
            diffraction: None,
        };
        let mut fluxes = vec![plane.clone()];
        if d.toward * sign < 0.0 {
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
            sources,
            tfsf: None,
            probes: Vec::new(),
            snapshots: Vec::new(),
            fluxes,
            dispersive_counts: Default::default(),
            conformal: Default::default(),
            conformal_estimate: Default::default(),
            surface_ports: Default::default(),
            conformal_reduced: false,
            scan: None,
            sparameters: None,
            terminals: Vec::new(),
            cell_passes: Vec::new(),
            imaginary: false,
            ..self.clone()
        }
    }

    /// The in-plane axis of the incident column that is this model's in-plane axis `t` of a
    /// plane normal to `a` ([`Model::incident_column`] turns the axes so that `a` is z).
    pub fn column_axis(a: usize, t: usize) -> usize {
        (t + 5 - a) % 3
    }

    /// The cross-section of this model across axis `a` over that of its incident `column`
    /// (across z).
    pub fn column_area_ratio(&self, column: &Model, a: usize) -> f64 {
        let (big, small) = (self.grid.size(), column.grid.size());
        let main: f64 = (0..3).filter(|&t| t != a).map(|t| big[t]).product();
        main / (small[0] * small[1])
    }
}
