//! The kernel sources, embedded in the binary, and the program text built from them.
//!
//! NVRTC compiles `typedef float real;` (or `double`) followed by an `#include` of every file
//! in [`FILES`], which it is handed as headers. The host-kernel tests compile the same text
//! with `c++` behind `kernels/host_shim.h` and `kernels/host_launch.h`.

use crate::model::Precision;

/// Every kernel source file: (name, text), in include order.
pub const FILES: [(&str, &str); 13] = [
    ("common.cuh", include_str!("../../../kernels/common.cuh")),
    ("update.cu", include_str!("../../../kernels/update.cu")),
    ("cpml.cu", include_str!("../../../kernels/cpml.cu")),
    ("sources.cu", include_str!("../../../kernels/sources.cu")),
    ("monitors.cu", include_str!("../../../kernels/monitors.cu")),
    ("halo.cu", include_str!("../../../kernels/halo.cu")),
    ("flux.cu", include_str!("../../../kernels/flux.cu")),
    (
        "dispersive.cu",
        include_str!("../../../kernels/dispersive.cu"),
    ),
    ("tfsf.cu", include_str!("../../../kernels/tfsf.cu")),
    (
        "conformal.cu",
        include_str!("../../../kernels/conformal.cu"),
    ),
    ("lumped.cu", include_str!("../../../kernels/lumped.cu")),
    ("bloch.cu", include_str!("../../../kernels/bloch.cu")),
    ("ports.cu", include_str!("../../../kernels/ports.cu")),
];

/// The host shim and launcher (host-kernel tests only).
pub const HOST_FILES: [(&str, &str); 2] = [
    ("host_shim.h", include_str!("../../../kernels/host_shim.h")),
    (
        "host_launch.h",
        include_str!("../../../kernels/host_launch.h"),
    ),
];

/// The C type of `real` for a precision.
pub fn real_type(precision: Precision) -> &'static str {
    match precision {
        Precision::F32 => "float",
        Precision::F64 => "double",
    }
}

/// The translation unit NVRTC compiles: the `real` typedef and an `#include` of every file.
pub fn program(precision: Precision) -> String {
    let mut s = format!("typedef {} real;\n", real_type(precision));
    for (name, _) in FILES {
        s.push_str(&format!("#include \"{name}\"\n"));
    }
    s
}

/// The translation unit for a host build: the shim first, the kernels, then the launchers.
pub fn host_program(precision: Precision) -> String {
    let mut s = String::from("#include \"host_shim.h\"\n");
    s.push_str(&program(precision));
    s.push_str("#include \"host_launch.h\"\n");
    s
}
