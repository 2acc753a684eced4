//! A diffraction monitor's datasets in `/diffraction/<name>/` (design.md section 11):
//! `frequency`, `orders` (`[order, 2]`: m, n along the plane's in-plane axes in x, y, z order),
//! `power`, `power_s`, `power_p`, `angle`, `azimuth` (`[frequency, order]`), `incident`
//! (`[frequency]`: the plane wave's power through the cell, in the flux's units) and `flux` (the
//! plane's total flux along +axis); attributes `axes` (the in-plane axes), `direction` (the
//! side counted, away from the source: `+z` or `-z`).

use super::str_attr;
use crate::diffraction::Orders;
use crate::model::{Diffraction, Flux};

/// The datasets of one diffraction monitor.
pub struct DiffractionSet {
    power: hdf5::Dataset,
    power_s: hdf5::Dataset,
    power_p: hdf5::Dataset,
    angle: hdf5::Dataset,
    azimuth: hdf5::Dataset,
    incident: hdf5::Dataset,
}

/// The five `[frequency, order]` datasets, in [`DiffractionSet`]'s order.
const PER_ORDER: [&str; 5] = ["power", "power_s", "power_p", "angle", "azimuth"];

impl DiffractionSet {
    /// The datasets of diffraction monitor `flux` (its orders `d`) in its group `grp`.
    pub fn create(grp: &hdf5::Group, flux: &Flux, d: &Diffraction) -> hdf5::Result<DiffractionSet> {
        let names = ["x", "y", "z"];
        let patch = &flux.patches[0];
        let [p, q] = patch.in_plane();
        let a = patch.axis as usize;
        str_attr(grp, "axes", &format!("{}{}", names[p], names[q]))?;
        let sign = if d.toward > 0.0 { "+" } else { "-" };
        str_attr(grp, "direction", &format!("{sign}{}", names[a]))?;
        str_attr(grp, "orders_definition", "power: each order's share of the plane's flux (Floquet decomposition of the complex DFT fields, which sums to the flux exactly) counted along `direction`, over `incident`, the source's plane wave power through the cell measured on a column of its medium; power_s and power_p: its parts with E across and in the order's plane of incidence; angle: from the normal (degrees, NaN where the order does not propagate at that frequency); azimuth: of the order's transverse wavevector from the first of `axes` towards the second")?;
        let k = d.orders.len();
        let flat: Vec<i64> = d.orders.iter().flatten().copied().collect();
        grp.new_dataset::<i64>()
            .shape((k, 2))
            .create("orders")?
            .write_raw(&flat)?;
        let nf = flux.frequencies.len();
        let blank = vec![f64::NAN; nf * k];
        let mut sets = Vec::new();
        for name in PER_ORDER {
            let ds = grp.new_dataset::<f64>().shape((nf, k)).create(name)?;
            ds.write_raw(&blank)?;
            sets.push(ds);
        }
        let incident = grp.new_dataset::<f64>().shape(nf).create("incident")?;
        incident.write_raw(&vec![f64::NAN; nf])?;
        let [power, power_s, power_p, angle, azimuth] =
            <[hdf5::Dataset; 5]>::try_from(sets).expect("five datasets");
        Ok(DiffractionSet {
            power,
            power_s,
            power_p,
            angle,
            azimuth,
            incident,
        })
    }

    /// The datasets of a diffraction monitor in an existing result's group `grp` (a resumed
    /// run).
    pub fn open(grp: &hdf5::Group) -> hdf5::Result<DiffractionSet> {
        let [power, power_s, power_p, angle, azimuth] = PER_ORDER.map(|n| grp.dataset(n));
        Ok(DiffractionSet {
            power: power?,
            power_s: power_s?,
            power_p: power_p?,
            angle: angle?,
            azimuth: azimuth?,
            incident: grp.dataset("incident")?,
        })
    }

    /// Write the orders and the incident power.
    pub fn write(&self, orders: &Orders, incident: &[f64]) -> hdf5::Result<()> {
        let flat = |rows: &[Vec<f64>]| -> Vec<f64> { rows.iter().flatten().copied().collect() };
        self.power.write_raw(&flat(&orders.power))?;
        self.power_s.write_raw(&flat(&orders.power_s))?;
        self.power_p.write_raw(&flat(&orders.power_p))?;
        self.angle.write_raw(&flat(&orders.angle))?;
        self.azimuth.write_raw(&flat(&orders.azimuth))?;
        if incident.len() == self.incident.size() {
            self.incident.write_raw(incident)?;
        }
        Ok(())
    }
}
