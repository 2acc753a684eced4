//! The kernel launches of each pass ([`crate::backend::pass`]) on a range of planes of one
//! slab, in the CPU backend's order within the pass.

use super::super::args::*;
use super::device::{Device, DeviceError, Stream};
use super::slab::Slab;
use super::CudaEngine;
use crate::backend::{Half, Pass};
use crate::real::Real;

/// The address of weight `first` of a sheet's weight table `w` of `real`-byte values, 0 (a
/// uniform sheet) where `w` is.
fn sheet_weights_from(w: Ptr, first: usize, real: usize) -> Ptr {
    if w == 0 {
        0
    } else {
        w + (first * real) as u64
    }
}

impl<D: Device, T: Real> CudaEngine<D, T> {
    /// The main update's arguments for `half` on planes [p0, p1) of slab `s`: the H update
    /// takes the primal steps, the E update the dual ones. The x table's address is moved back
    /// by the slab's first global plane less one, so that local plane p reads global x0 + p - 1.
    pub(super) fn update_args(
        &self,
        s: &Slab,
        half: Half,
        p0: usize,
        p1: usize,
        chunk: u32,
    ) -> UpdateArgs<T> {
        let [ix, iy, iz] = self.inv[s.gpu][matches!(half, Half::E) as usize];
        let t = std::mem::size_of::<T>() as u64;
        UpdateArgs {
            ex: s.f[0],
            ey: s.f[1],
            ez: s.f[2],
            hx: s.f[3],
            hy: s.f[4],
            hz: s.f[5],
            mx: s.mat[0],
            my: s.mat[1],
            mz: s.mat[2],
            hmx: s.hmat[0],
            hmy: s.hmat[1],
            hmz: s.hmat[2],
            plane: self.plane as i64,
            ny: self.ny as i32,
            nz: self.nz as i32,
            p0: p0 as i32,
            p1: p1 as i32,
            chunk: chunk as i32,
            y_lo: self.faces[0],
            y_hi: self.faces[1],
            z_lo: self.faces[2],
            z_hi: self.faces[3],
            magnetic: self.magnetic as i32,
            ix: ix.wrapping_add(s.range.x0 as u64 * t).wrapping_sub(t),
            iy,
            iz,
            ch: self.ch,
            pad: T::ZERO,
        }
    }

    pub(super) fn cpml_args(
        &self,
        s: &Slab,
        axis: usize,
        half: Half,
        p0: usize,
        p1: usize,
    ) -> CpmlArgs<T> {
        let (lo, hi, n) = self.layers[axis];
        // psi arrays 0, 1 belong to E, 2, 3 to H; coefficient tables are (E, H).
        let (first, table) = match half {
            Half::E => (0, 0),
            Half::H => (2, 1),
        };
        CpmlArgs {
            ex: s.f[0],
            ey: s.f[1],
            ez: s.f[2],
            hx: s.f[3],
            hy: s.f[4],
            hz: s.f[5],
            psi0: s.psi[axis][first],
            psi1: s.psi[axis][first + 1],
            coef: self.pml_coef[s.gpu][axis][table],
            mx: s.mat[0],
            my: s.mat[1],
            mz: s.mat[2],
            hmx: s.hmat[0],
            hmy: s.hmat[1],
            hmz: s.hmat[2],
            plane: self.plane as i64,
            ny: self.ny as i32,
            nz: self.nz as i32,
            p0: p0 as i32,
            p1: p1 as i32,
            lo: lo as i32,
            hi: hi as i32,
            n_axis: n as i32,
            l0: 0,
            q0: 0,
            magnetic: self.magnetic as i32,
            ch: self.ch,
            pad: T::ZERO,
        }
    }

    /// Pass `pass` of half step `half` on planes [p0, p1) of slab `s`, as the CPU backend
    /// does it: the curl pass is the main update then CPML x, y, z; the conformal PEC pass
    /// one launch over the planes' cut faces; the source passes take the sources in model
    /// order.
    pub(super) fn run_planes(
        &self,
        s: &Slab,
        half: Half,
        pass: Pass,
        p0: usize,
        p1: usize,
        values: &[f64],
    ) -> Result<(), DeviceError> {
        if p1 == p0 {
            return Ok(());
        }
        match (half, pass) {
            (_, Pass::CurlCpml) => self.curl_cpml(s, half, p0, p1),
            (Half::H, Pass::Conformal) => self.conformal(s, p0, p1),
            // values[0]: 1 for the imaginary set ([`CudaEngine::correct_bloch`]). Without a
            // Bloch phase there is nothing to correct.
            (_, Pass::Bloch) => match values.first() {
                Some(&v) if self.bloch.iter().any(Option::is_some) => {
                    self.bloch_planes(s, half, p0, p1, v != 0.0)
                }
                _ => Ok(()),
            },
            (Half::H, Pass::MagneticSources) | (Half::E, Pass::Sources) => {
                self.sources(s, half, p0, p1, values)
            }
            (Half::E, Pass::Dispersive) => self.dispersive(s, p0, p1),
            (Half::E, Pass::PecFaces) => self.pec_faces(s, p0, p1),
            (_, Pass::Tfsf) => self.tfsf_correct(s, half, p0, p1),
            (_, Pass::Cells) => self.cell_passes(s, half, p0, p1),
            (half, pass) => {
                unreachable!("no {} pass in the {} half step", pass.name(), half.name())
            }
        }
    }

    /// The curl pass on planes [p0, p1): main update, then CPML x, y, z.
    pub(super) fn curl_cpml(
        &self,
        s: &Slab,
        half: Half,
        p0: usize,
        p1: usize,
    ) -> Result<(), DeviceError> {
        let gpu = s.gpu;
        let np = p1 - p0;
        let (dims, chunk) = Dims::columns(self.plane as u64, np as u32);
        let main = match half {
            Half::H => Kernel::UpdateH,
            Half::E => Kernel::UpdateE,
        };
        self.launch(
            gpu,
            Stream::Compute,
            main,
            dims,
            &self.update_args(s, half, p0, p1, chunk),
        )?;
        self.cpml_corrections(s, half, p0, p1)
    }

    /// The CPML corrections of `half` on planes [p0, p1) of slab `s`: x, then y, then z.
    pub(super) fn cpml_corrections(
        &self,
        s: &Slab,
        half: Half,
        p0: usize,
        p1: usize,
    ) -> Result<(), DeviceError> {
        let gpu = s.gpu;
        let np = p1 - p0;
        let [kx, ky, kz] = match half {
            Half::H => [Kernel::CpmlXH, Kernel::CpmlYH, Kernel::CpmlZH],
            Half::E => [Kernel::CpmlXE, Kernel::CpmlYE, Kernel::CpmlZE],
        };
        for run in &s.x_runs {
            let (a, b) = (run.p0.max(p0), run.p1.min(p1));
            if a < b {
                let mut args = self.cpml_args(s, 0, half, a, b);
                args.l0 = (run.l0 + a - run.p0) as i32;
                args.q0 = (run.q0 + a - run.p0) as i32;
                self.launch(
                    gpu,
                    Stream::Compute,
                    kx,
                    Dims::elements(((b - a) * self.plane) as u64, 1),
                    &args,
                )?;
            }
        }
        let (ylo, yhi, _) = self.layers[1];
        if ylo + yhi > 0 {
            let n = (np * (ylo + yhi) * self.nz) as u64;
            self.launch(
                gpu,
                Stream::Compute,
                ky,
                Dims::elements(n, 1),
                &self.cpml_args(s, 1, half, p0, p1),
            )?;
        }
        let (zlo, zhi, _) = self.layers[2];
        if zlo + zhi > 0 {
            let n = (np * self.ny * (zlo + zhi)) as u64;
            self.launch(
                gpu,
                Stream::Compute,
                kz,
                Dims::elements(n, 1),
                &self.cpml_args(s, 2, half, p0, p1),
            )?;
        }
        Ok(())
    }

    /// The source pass of `half` on planes [p0, p1): each sheet's cells there, a mode source's
    /// with its weights from the first of those cells on.
    pub(super) fn sources(
        &self,
        s: &Slab,
        half: Half,
        p0: usize,
        p1: usize,
        values: &[f64],
    ) -> Result<(), DeviceError> {
        let gpu = s.gpu;
        // H: the magnetic sheets (H -= ch M); E: the electric ones (E -= cb J).
        let (sheets, weights) = match half {
            Half::H => (&s.magnetic, &s.weights[1]),
            Half::E => (&s.sources, &s.weights[0]),
        };
        for (&(k, c, cells), &w) in sheets.iter().zip(weights) {
            let (a, b) = (cells[0][0].max(p0), cells[0][1].min(p1));
            if a >= b {
                continue;
            }
            let per_plane = (cells[1][1] - cells[1][0]) * (cells[2][1] - cells[2][0]);
            let (fi, mat, magnetic) = match half {
                Half::H => (3 + c as usize % 3, Ptr::default(), 1),
                Half::E => (c as usize, s.mat[c as usize], 0),
            };
            let args = SourceArgs {
                f: s.f[fi],
                mat,
                w: sheet_weights_from(w, (a - cells[0][0]) * per_plane, std::mem::size_of::<T>()),
                plane: self.plane as i64,
                nz: self.nz as i32,
                p0: a as i32,
                p1: b as i32,
                y0: cells[1][0] as i32,
                y1: cells[1][1] as i32,
                z0: cells[2][0] as i32,
                z1: cells[2][1] as i32,
                magnetic,
                j: T::from_f64(values[k]),
                ch: self.ch,
            };
            let n = ((b - a) * per_plane) as u64;
            self.launch(
                gpu,
                Stream::Compute,
                Kernel::InjectSource,
                Dims::elements(n, 1),
                &args,
            )?;
        }
        Ok(())
    }

    /// The dispersive pass on planes [p0, p1): each group's cells there (a contiguous range,
    /// the cells being sorted), one `dispersive` launch per group with cells in the range.
    /// It reads and writes only E and the state of its own cells, so the boundary and interior
    /// launches together are the CPU's one sweep over the group.
    pub(super) fn dispersive(&self, s: &Slab, p0: usize, p1: usize) -> Result<(), DeviceError> {
        for g in &s.dispersive {
            let (q0, q1) = (g.plane_start[p0 - 1], g.plane_start[p1 - 1]);
            if q0 >= q1 {
                continue;
            }
            let template = self.poles[g.material as usize]
                .as_ref()
                .expect("a dispersive group's material has poles");
            let t = std::mem::size_of::<T>() as u64;
            let args = DispersiveArgs {
                e: s.f[g.component] + self.plane as u64 * t,
                cells: g.cells,
                e_prev: g.e_prev,
                state: g.state,
                n: g.n as i64,
                q0: q0 as i64,
                q1: q1 as i64,
                ..*template
            };
            self.launch(
                s.gpu,
                Stream::Compute,
                Kernel::Dispersive,
                Dims::elements((q1 - q0) as u64, 1),
                &args,
            )?;
        }
        Ok(())
    }

    /// The cells pass of `half` on planes [p0, p1): each cell pass of the half's components
    /// (in model order, as the CPU runs them on a plane) whose box meets the planes, one
    /// `lumped` launch over its cells there. A cell's update reads and writes only its own
    /// field value and state, so the boundary and interior launches together are the CPU's
    /// sweep, and the order of the passes over the planes does not change a bit.
    pub(super) fn cell_passes(
        &self,
        s: &Slab,
        half: Half,
        p0: usize,
        p1: usize,
    ) -> Result<(), DeviceError> {
        for g in s
            .cells
            .iter()
            .filter(|g| (g.component < 3) == (half == Half::E))
        {
            // The box's local planes in the slab, and those of them in [p0, p1).
            let (lo, hi) = (g.x[0] + 1 - s.range.x0, g.x[1] + 1 - s.range.x0);
            let (a, b) = (lo.max(p0), hi.min(p1));
            if g.n == 0 || a >= b {
                continue;
            }
            let c = g.cells;
            let per_plane = (c[1][1] - c[1][0]) * (c[2][1] - c[2][0]);
            let args = LumpedArgs {
                f: s.f[g.component],
                state: g.state,
                coef: g.coef,
                plane: self.plane as i64,
                cells: g.n as i64,
                first: ((a - lo) * per_plane) as i64,
                nz: self.nz as i32,
                p0: a as i32,
                p1: b as i32,
                y0: c[1][0] as i32,
                y1: c[1][1] as i32,
                z0: c[2][0] as i32,
                z1: c[2][1] as i32,
                series: g.series as i32,
            };
            self.launch(
                s.gpu,
                Stream::Compute,
                Kernel::Lumped,
                Dims::elements(((b - a) * per_plane) as u64, 1),
                &args,
            )?;
        }
        Ok(())
    }

    /// The PEC-faces pass on planes [p0, p1).
    pub(super) fn pec_faces(&self, s: &Slab, p0: usize, p1: usize) -> Result<(), DeviceError> {
        let gpu = s.gpu;
        let np = p1 - p0;
        let x_face = self.zero_min_face[0] && s.range.x0 == 0 && p0 <= 1 && 1 < p1;
        let [_, y_face, z_face] = self.zero_min_face;
        let threads = [
            if x_face { self.plane } else { 0 },
            if y_face { np * self.nz } else { 0 },
            if z_face { np * self.ny } else { 0 },
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        if threads > 0 {
            let args = PecArgs {
                ex: s.f[0],
                ey: s.f[1],
                ez: s.f[2],
                plane: self.plane as i64,
                ny: self.ny as i32,
                nz: self.nz as i32,
                p0: p0 as i32,
                p1: p1 as i32,
                x_face: x_face as i32,
                y_face: y_face as i32,
                z_face: z_face as i32,
                pad: 0,
            };
            self.launch(
                gpu,
                Stream::Compute,
                Kernel::ZeroPec,
                Dims::elements(threads as u64, 1),
                &args,
            )?;
        }
        Ok(())
    }

    /// The conformal PEC pass on planes [p0, p1): one `conformal_h` launch over the cut faces
    /// of all three H components there (each component's faces of a plane range being one
    /// contiguous range of its sorted table), none where the planes hold no face. A face reads
    /// E on its plane and the next, as the curl does, and writes only its own H.
    pub(super) fn conformal(&self, s: &Slab, p0: usize, p1: usize) -> Result<(), DeviceError> {
        let Some(faces) = &s.conformal else {
            return Ok(());
        };
        let range = |c: usize| {
            let start = &faces.plane_start[c];
            let base = faces.base[c];
            (base + start[p0 - 1], base + start[p1 - 1])
        };
        let ranges = [0, 1, 2].map(range);
        let n: usize = ranges.iter().map(|(a, b)| b - a).sum();
        if n == 0 {
            return Ok(());
        }
        let args = ConformalArgs {
            ex: s.f[0],
            ey: s.f[1],
            ez: s.f[2],
            hx: s.f[3],
            hy: s.f[4],
            hz: s.f[5],
            off: faces.off,
            w: faces.w,
            plane: self.plane as i64,
            q0: ranges.map(|(a, _)| a as i64),
            q1: ranges.map(|(_, b)| b as i64),
            nz: self.nz as i32,
            pad: 0,
        };
        self.launch(
            s.gpu,
            Stream::Compute,
            Kernel::ConformalH,
            Dims::elements(n as u64, 1),
            &args,
        )
    }

    /// The TF/SF source's 1-D grid, one half step, on every slab's copy (a slab that holds
    /// correction points has one): `tfsf_incident`, once per half step before the corrections.
    pub(super) fn tfsf_incident(&self, half: Half, values: &[f64]) -> Result<(), DeviceError> {
        let Some((nodes, s, drive_index)) = self.tfsf else {
            return Ok(());
        };
        let drive = match half {
            Half::H => T::from_f64(values[drive_index]),
            Half::E => T::ZERO,
        };
        for slab in &self.slabs {
            let Some([e, h]) = slab.incident else {
                continue;
            };
            let args = TfsfIncidentArgs {
                e,
                h,
                n: nodes as i64,
                h_phase: (half == Half::H) as i32,
                pad: 0,
                s,
                drive,
            };
            self.launch(
                slab.gpu,
                Stream::Compute,
                Kernel::TfsfIncident,
                Dims::elements(nodes as u64, 1),
                &args,
            )?;
        }
        Ok(())
    }

    /// The TF/SF corrections of `half` on planes [p0, p1): each group's points there, one
    /// `tfsf_correct` launch per group, in pass order (the CPU's order).
    pub(super) fn tfsf_correct(
        &self,
        s: &Slab,
        half: Half,
        p0: usize,
        p1: usize,
    ) -> Result<(), DeviceError> {
        let Some([e, h]) = s.incident else {
            return Ok(());
        };
        for g in &s.tfsf {
            let electric = g.component < 3;
            if electric != (half == Half::E) {
                continue;
            }
            let (q0, q1) = (g.plane_start[p0 - 1], g.plane_start[p1 - 1]);
            if q0 >= q1 {
                continue;
            }
            let c = g.component % 3;
            let args = TfsfArgs {
                f: s.f[g.component],
                mat: if electric { s.mat[c] } else { s.hmat[c] },
                off: g.off,
                node: g.node,
                w: g.w,
                fac: g.fac,
                inc: if electric { h } else { e },
                plane: self.plane as i64,
                q0: q0 as i64,
                q1: q1 as i64,
                electric: electric as i32,
                magnetic: self.magnetic as i32,
                ch: self.ch,
                pad: T::ZERO,
            };
            self.launch(
                s.gpu,
                Stream::Compute,
                Kernel::TfsfCorrect,
                Dims::elements((q1 - q0) as u64, 1),
                &args,
            )?;
        }
        Ok(())
    }
}

/// One array a pass registers for a slab, on the slab's GPU: its pieces (device pointer,
/// cells), each stored `[slot][cell]`, back to back in the array's cell order (a slab may hold
/// several groups of one dispersive array).
pub(super) struct DeviceArray {
    /// Its registered name ([`crate::backend::pass::arrays`]).
    pub(super) name: String,
    /// How it lies across the slabs.
    pub(super) spread: crate::backend::Spread,
    /// Its pieces on the slab's GPU.
    pub(super) pieces: Vec<(Ptr, usize)>,
    /// A CPML E psi array along this axis: its outer wall values are zeroed on export
    /// ([`CudaEngine::zero_wall`]).
    pub(super) wall: Option<usize>,
}

impl<D: Device, T: Real> CudaEngine<D, T> {
    /// The arrays the passes keep for slab `s` ([`crate::backend::pass::arrays`]), by name:
    /// the CPML's psi arrays, the dispersive groups' E^n and pole state, the slab's copy
    /// of the TF/SF incident grid and each cell pass's state (`NAME.state`, as the CPU backend
    /// registers it, empty where the pass's box misses the slab).
    pub(super) fn registered(&self, s: &Slab) -> Vec<DeviceArray> {
        use crate::backend::pass::arrays::*;
        let mut out = Vec::new();
        let n = s.range.len();
        let x_planes: usize = s.x_runs.iter().map(|r| r.p1 - r.p0).sum();
        let ly = self.layers[1].0 + self.layers[1].1;
        let lz = self.layers[2].0 + self.layers[2].1;
        let lens = [x_planes * self.plane, n * ly * self.nz, n * self.ny * lz];
        for (a, &len) in lens.iter().enumerate() {
            for k in 0..4 {
                let (name, spread) = cpml_psi(a, k);
                out.push(DeviceArray {
                    name,
                    spread,
                    pieces: if len > 0 {
                        vec![(s.psi[a][k], len)]
                    } else {
                        vec![]
                    },
                    wall: (k < 2).then_some(a),
                });
            }
        }
        let mut keys: Vec<(usize, u8)> = s
            .dispersive
            .iter()
            .map(|g| (g.component, g.material))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for (c, m) in keys {
            let groups = s
                .dispersive
                .iter()
                .filter(|g| g.component == c && g.material == m);
            let (name, spread) = dispersive_e_prev(c, m);
            out.push(DeviceArray {
                name,
                spread,
                pieces: groups.clone().map(|g| (g.e_prev, g.n)).collect(),
                wall: None,
            });
            let (name, spread) = dispersive_poles(c, m, self.state_len(m));
            out.push(DeviceArray {
                name,
                spread,
                pieces: groups.map(|g| (g.state, g.n)).collect(),
                wall: None,
            });
        }
        if let (Some(grid), Some((nodes, _, _))) = (s.incident, self.tfsf) {
            for (k, ptr) in grid.into_iter().enumerate() {
                let (name, spread) = tfsf_incident(k);
                out.push(DeviceArray {
                    name,
                    spread,
                    pieces: vec![(ptr, nodes)],
                    wall: None,
                });
            }
        }
        for g in &s.cells {
            let (name, spread) = cell_pass_state(&g.name, g.slots);
            out.push(DeviceArray {
                name,
                spread,
                pieces: if g.n > 0 && g.slots > 0 {
                    vec![(g.state, g.n)]
                } else {
                    vec![]
                },
                wall: None,
            });
        }
        let index = self.slabs.iter().position(|x| x.range == s.range);
        out.extend(self.port_arrays(index.expect("one of the engine's slabs")));
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// State values per dispersive cell of material `m` (J and P for a Lorentz pole, one
    /// value for Drude and Debye).
    pub(super) fn state_len(&self, m: u8) -> usize {
        let poles = |p: &[PoleArgs<T>]| -> usize {
            p.iter()
                .map(|p| if p.kind == POLE_LORENTZ { 2 } else { 1 })
                .sum()
        };
        self.poles[m as usize].as_ref().map_or(0, |a| {
            if a.nparts == 0 {
                return poles(&a.poles[..a.npoles as usize]);
            }
            let parts = &a.parts[..a.nparts as usize];
            let total: usize = parts.iter().map(|p| p.npoles as usize).sum();
            parts.len() + poles(&a.poles[..total])
        })
    }

    /// Zero the outer wall values of a CPML E psi array along `axis` (x plane 0, y row 0, z
    /// cell 0 of the minimum layer) of a slab of `nx` planes, the first of which is x plane 0
    /// where `from_x0`, as the CPU backend holds them: the kernels update psi there too, but E
    /// on that PEC-backed wall is zeroed every step, so those values never reach a field, and
    /// the CPU skips them. The exported state is then the same from both engines.
    pub(super) fn zero_wall(&self, axis: usize, psi: &mut [T], nx: usize, from_x0: bool) {
        let (ny, nz) = (self.ny, self.nz);
        if self.layers[axis].0 == 0 || psi.is_empty() {
            return;
        }
        match axis {
            0 if from_x0 => psi[..self.plane].fill(T::ZERO),
            1 => {
                let ly = self.layers[1].0 + self.layers[1].1;
                for p in 0..nx {
                    psi[p * ly * nz..][..nz].fill(T::ZERO);
                }
            }
            2 => {
                let lz = self.layers[2].0 + self.layers[2].1;
                for row in 0..nx * ny {
                    psi[row * lz] = T::ZERO;
                }
            }
            _ => {}
        }
    }
}
