//! yee: a finite-difference time-domain (FDTD) electromagnetic solver.
//!
//! The library API follows the data flow of the design: [`scene::load`] reads and checks a
//! scene file into a [`model::Model`]; [`decomp`] splits the grid into slabs; a backend steps
//! the fields; [`output`] streams results to HDF5; [`run::run`] ties them together.

pub mod model;
pub mod scene;
pub mod backend;
pub mod decomp;
pub mod real;
pub mod output;
pub mod run;
pub mod devices;
pub mod fpu;
pub mod plan;
pub mod bench;
pub mod flux;
