#!/usr/bin/env bash
# Set up (system packages, release build) and run the example scene: a dipole radiating in
# vacuum inside a CPML. Writes dipole.h5 and dipole.xmf in the current directory.
#   scripts/run-example.sh [SCENE] [yee run options...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/deps.sh"
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
scene="${1:-$root/scenes/dipole.toml}"
shift || true
"$root/target/release/yee" run "$scene" --overwrite "$@"
