#![warn(missing_docs)]
//! yee: a finite-difference time-domain (FDTD) electromagnetic solver.
//!
//! The library API follows the data flow of the design: [`scene::load`] reads and checks a
//! scene file into a [`model::Model`]; [`decomp`] splits the grid into slabs; a backend steps
//! the fields; [`output`] streams results to HDF5; [`run::run`] ties them together.

pub mod backend;
pub mod bench;
pub mod checkpoint;
pub mod cli;
pub mod decomp;
pub mod devices;
pub mod diffraction;
pub mod far_field;
pub mod fault;
pub mod flux;
pub mod fpu;
pub mod model;
pub mod modes;
pub mod operator;
pub mod output;
pub mod plan;
pub mod ranks;
pub mod real;
pub mod run;
pub mod scene;
pub mod tuning;
