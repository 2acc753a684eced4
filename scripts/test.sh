#!/usr/bin/env bash
# The whole test suite, from a fresh machine: system packages, a Python venv (h5py, numpy,
# matplotlib, pytest, scikit-rf (reads the Touchstone files back), grcwa (the RCWA reference of
# the diffraction tests), gdstk and shapely (the Python
# geometry tests and example), the yee wheel (the engine as a
# Python extension, built by maturin, with yee_post and the `yee` command) and
# the NVRTC wheel the kernel compile tests use),
# formatting and lint checks, the Rust tests and the Python tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

scripts/deps.sh

# Python environment (kept in .venv; reused when present).
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check \
    "h5py>=3.8" "numpy>=1.24" "matplotlib>=3.7" "pytest>=7" "scikit-rf>=1.0" "gdstk>=0.9" "shapely>=2.0" "grcwa>=0.1.2" \
    "nvidia-cuda-nvrtc-cu12==12.9.86"
.venv/bin/pip install --quiet --disable-pip-version-check ./python

# NVRTC from the wheel: cudarc loads it through the dynamic loader's path.
nvrtc_lib="$(.venv/bin/python -c 'import importlib.util as u; print(list(u.find_spec("nvidia.cuda_nvrtc").submodule_search_locations)[0] + "/lib")')"
export LD_LIBRARY_PATH="$nvrtc_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# With CI set, kernel compile tests fail (rather than skip) when NVRTC cannot be loaded.
export YEE_REQUIRE_NVRTC=1

# The test hooks (src/fault.rs) are read only with the `fault-injection` feature: every build
# and test below has it, so the release crate is compiled once.
hooks=fault-injection
cargo fmt --check
cargo clippy --release --features $hooks --all-targets --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet
cargo build --release --features $hooks --quiet
cargo test --release --features $hooks
# Debug assertions are compiled out of --release: the backends' allocation checks (CPU slabs
# against the plan, the CUDA engine against its estimate), the engine's halo-plan check and the
# overflow checks run here, in the test profile (opt-level 3, debug assertions on), over the
# tests that build every backend on many splits. A second build of the dependencies: a few
# minutes cold on 2 cores (docs/testing.md).
YEE_EXPECT_DEBUG_ASSERTIONS=1 cargo test --lib --test decomposition --test plan_alloc --test host_ranks \
    --test host_kernels
YEE_BIN="$root/target/release/yee" .venv/bin/python -m pytest -q python/tests
# The `mpi` feature (off by default): lint, and one domain over 2 and 3 ranks against one
# process (mpirun as root with --oversubscribe). A second build of the crate with the feature.
cargo clippy --release --features mpi,$hooks --all-targets --quiet -- -D warnings
cargo test --release --features mpi,$hooks --test mpi
