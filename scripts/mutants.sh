#!/usr/bin/env bash
# Mutation testing of the physics core with cargo-mutants (https://mutants.rs): each mutant is
# a small change to the code (an operator swapped, a function body replaced by a constant) that
# the tests must reject. Not part of CI: on 2 cores one mutant takes about half a minute to
# build and test, so the whole core is hours. See docs/testing.md for the last result and how
# to read it.
#
# Usage: scripts/mutants.sh [FILE...]
#   FILE         source files to mutate (default: the whole physics core, listed below)
#   MUTANTS_TESTS  the cargo test selection run against every mutant (default below: the
#                library's unit tests and the integration tests that check physics against
#                references or the CPU backend against the host-compiled kernels)
#   MUTANTS_OUT  where cargo-mutants writes mutants.out/ (default: target/mutants)
#   MUTANTS_ARGS extra cargo-mutants arguments, split at spaces and not globbed, e.g.
#                "--re coefficients" or "--iterate" (write a space inside a regex as \s)
#   MUTANTS_JOBS mutants built and tested at once (default 1; 2 on an otherwise idle 2-core
#                machine overlaps one mutant's link and test start-up with the other's build)
#
# cargo-mutants works in a copy of the tree (the target directory is copied too, so only the
# changed crate is rebuilt), at the lowest priority, in the `mutants` profile (Cargo.toml:
# incremental, opt-level 1): a mutant rebuilds in about 12 s instead of the release profile's
# 100 s on 2 cores, and the selected tests run a little slower. The tests run under
# cargo-nextest when it is installed: it stops at a mutant's first failing test, where
# `cargo test` runs every selected target to the end, so a caught mutant costs its build and
# seconds of tests instead of the whole selection (about 40 s for the dispersive one).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

if ! cargo mutants --version >/dev/null 2>&1; then
    cargo install cargo-mutants --locked
fi

core=(
    src/model/materials.rs
    src/model/pml.rs
    src/backend/cpu/update.rs
    src/backend/cpu/cpml.rs
    src/backend/cpu/fused.rs
    src/decomp/mod.rs
    src/decomp/ranks.rs
    src/model/sources.rs
    src/flux.rs
    src/operator.rs
    src/model/dispersion.rs
    src/backend/cpu/dispersive.rs
)
if [ $# -gt 0 ]; then
    files=("$@")
else
    files=("${core[@]}")
fi

# Tests that are fast (seconds) and that compare with something independent of the mutated
# code: analytic results (physics, boundaries, fresnel, thin_film, references*), the CUDA
# kernels compiled for the host (host_kernels: the CPU update, CPML and halo exchange against
# kernels/*.cu), split against unsplit (decomposition), and tests written to kill mutants.
default_tests="--lib --test physics --test boundaries --test fresnel --test thin_film"
default_tests+=" --test decomposition --test host_kernels --test host_ranks"
for t in tests/references*.rs tests/mutants_*.rs; do
    [ -e "$t" ] && default_tests+=" --test $(basename "$t" .rs)"
done
tests="${MUTANTS_TESTS:-$default_tests}"

file_args=()
for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "mutants.sh: no such file: $f" >&2; exit 2; }
    file_args+=(--file "$f")
done

# The selection goes to every cargo invocation (--cargo-arg), so that only these test targets are
# built for each mutant, not the whole suite.
test_args=()
for a in $tests; do
    test_args+=("--cargo-arg=$a")
done

out="${MUTANTS_OUT:-target/mutants}"
mkdir -p "$out"
echo "mutants.sh: files: ${files[*]}"
echo "mutants.sh: tests: $tests"
# shellcheck disable=SC2086 # the extra arguments are a word list
set -f # ... whose regexes must not be taken for file patterns
tool=cargo
if cargo nextest --version >/dev/null 2>&1; then
    tool=nextest
fi
echo "mutants.sh: test tool: $tool"
exec nice -n 19 cargo mutants --jobs "${MUTANTS_JOBS:-1}" --test-tool "$tool" --profile mutants \
    --copy-target=true \
    --output "$out" "${file_args[@]}" "${test_args[@]}" ${MUTANTS_ARGS:-}
