#!/usr/bin/env bash
# The GPU check (design.md section 8): on a machine with an NVIDIA GPU, build with CUDA, run the
# GPU tests (the CUDA backend against the CPU backend on the comparison scenes, the conformal
# PEC cut faces and mode sources among them; 1, 2 and 4 slabs
# on one GPU giving identical fields; f32 and f64; the peer and the staged-through-host halo
# paths; queued monitors and the device flux DFT; a GPU failure mid-run exiting 1), `yee run
# --backend cuda` end to end, a checkpoint's state from the CPU into the GPU and back, `yee run
# scenes/gpr.toml --backend cuda`, a conformal PEC cavity (scenes/conformal_cavity.toml) on the
# GPU against the CPU bit for bit, a lumped port and series RLC (scenes/lumped_rlc.toml, f32) on
# the GPU against the CPU bit for bit, a Bloch cell (scenes/grating_oblique.toml) on the GPU's
# pair of engines against the CPU's bit for bit, a gold nanosphere's surface ports
# (scenes/gold_sphere.toml) on the GPU against the CPU bit for bit and beside the same sphere
# staircased, the 60-trace B-scan (traces per second: several at once on the GPU, one at a time,
# and on 2 CPU cores, the probes bit for bit) and a 1e8-cell scene
# with probes, snapshots and a flux plane (throughput and the share of wall time in monitors; the
# flux plane alone over 300 and 600 steps against no monitors), and
# `yee bench --backend cuda` on a vacuum cube of about 1e9 cells (the two-pass update, with a
# CPML and with PEC walls, f32 and f64, several slabs on one GPU, half a Drude-Lorentz metal);
# an Nsight Compute profile of the update, CPML, dispersive and flux kernels when `ncu` is
# installed; with Open MPI (here, or
# carried in the bundle), the MPI tests and 2 ranks on the GPU against one process; then print
# one table. A few minutes on an H100/H200.
#
#   scripts/gpu-check.sh                 build here with cargo (needs a Rust toolchain), then check
#   scripts/gpu-check.sh --make-bundle   build the binaries into gpu-bundle/ (with the shared
#                                        libraries they need, and Open MPI when installed
#                                        here), for a GPU machine without Rust or MPI
#   scripts/gpu-check.sh --bundle        check with the binaries in gpu-bundle/
#
# Environment: BENCH_SIZE (default 1000: 1e9 cells), BENCH_STEPS (default 100), YEE_NVRTC_DIR
# (a folder holding libnvrtc.so*, searched first), NCU=0 (no profile), SKIP_TUNING=1 (no tuning
# rows), SKIP_TESTS=1 (no test binaries: the timings alone, to split the check in two runs when
# device time is short), TEST_TIMEOUT (seconds per test binary, default 240).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mode="${1:-build}"
bundle="$root/gpu-bundle"

executables() { # cargo's JSON messages -> "name path" of each test executable we use
    grep -o '"executable":"[^"]*"' | sed 's/"executable":"//; s/"$//' | while read -r exe; do
        case "$(basename "$exe")" in
            cuda_backend-*) echo "cuda_backend $exe" ;;
            nvrtc_kernels-*) echo "nvrtc_kernels $exe" ;;
            host_kernels-*) echo "host_kernels $exe" ;;
            checkpoint-*) echo "checkpoint $exe" ;;
            host_ranks-*) echo "host_ranks $exe" ;;
            mpi-*) echo "mpi $exe" ;;
        esac
    done
}

# Open MPI for a GPU machine that has none, into $bundle/mpi: mpirun (orterun: Open MPI 4 starts
# the ranks of one node itself, orted only on other nodes, carried all the same), the plugins
# (MCA components) 2 ranks on one node use, the help texts mpirun prints its errors from, and the
# site's parameter file; the libraries all of these link go into $bundle/lib with the others.
# Open MPI finds these through OPAL_PREFIX and friends (--bundle below), not the paths it was
# built with. An external PMIx (Debian's) has plugins and help texts of its own, found through
# PMIX_PREFIX and friends.
bundle_openmpi() {
    local m="$bundle/mpi" info
    info="$(ompi_info --parsable --path all)"
    ompi_dir() { printf '%s\n' "$info" | sed -n "s/^path:$1://p" | head -1; }
    mkdir -p "$m/bin" "$m/lib/openmpi" "$m/share/openmpi" "$m/etc" "$m/pmix/lib/pmix" "$m/pmix/share/pmix"
    cp "$(readlink -f "$(command -v mpirun)")" "$m/bin/mpirun"
    if [ -x "$(ompi_dir bindir)/orted" ]; then cp "$(ompi_dir bindir)/orted" "$m/bin/"; fi
    # All plugins but those of fabrics (InfiniBand, UCX, libfabric, PSM), batch systems, OpenSHMEM,
    # the monitoring layer and netlink: none serves ranks on one node, and the fabrics' libraries
    # would be most of the bundle. The memory patcher only serves the fabrics' registration caches.
    local f
    for f in "$(ompi_dir pkglibdir)"/mca_*.so; do
        case "$(basename "$f")" in
            *ucx* | *ofi* | *openib* | *verbs* | *psm* | *usnic* | *portals*) ;;
            *slurm* | *flux* | *jsm* | *gridengine* | *_tm.so | *lsf* | *alps*) ;;
            mca_atomic_* | mca_memheap_* | mca_scoll_* | mca_spml_* | mca_sshmem_*) ;;
            *monitoring* | mca_reachable_netlink.so | mca_patcher_*) ;;
            *) cp "$f" "$m/lib/openmpi/" ;;
        esac
    done
    cp "$(ompi_dir pkgdatadir)"/help-*.txt "$m/share/openmpi/"
    # The site's parameters (Debian's turns off the fabrics), and the default hostfile mpirun reads.
    for f in openmpi-mca-params.conf openmpi-default-hostfile; do
        if [ -f "$(ompi_dir sysconfdir)/$f" ]; then cp "$(ompi_dir sysconfdir)/$f" "$m/etc/"; fi
    done
    local pmix
    pmix="$(ldd "$m"/lib/openmpi/mca_pmix_*.so 2>/dev/null | awk '/libpmix\.so/ {print $3; exit}')"
    if [ -n "$pmix" ]; then # PMIx's own layout: PREFIX/lib/libpmix.so*, PREFIX/lib/pmix, PREFIX/share/pmix
        local p
        p="$(dirname "$(dirname "$(readlink -f "$pmix")")")"
        cp "$p"/lib/pmix/*.so "$m/pmix/lib/pmix/" 2>/dev/null || true
        cp "$p"/share/pmix/help-*.txt "$m/pmix/share/pmix/" 2>/dev/null || true
    fi
}

if [ "$mode" = "--make-bundle" ]; then
    set -e
    # With Open MPI here (scripts/deps.sh), the `mpi` feature too, and Open MPI in the bundle:
    # the GPU machine has none. The same test, and one feature set for all, as the build below.
    features="cuda,fault-injection" # the GPU failure test reads YEE_CUDA_FAIL_AT_STEP
    if command -v mpirun >/dev/null && pkg-config --exists ompi-c 2>/dev/null; then features="cuda,fault-injection,mpi"; fi
    cargo build --release --features "$features" --quiet
    rm -rf "$bundle" && mkdir -p "$bundle/bin" "$bundle/lib"
    cargo test --release --features "$features" --no-run --message-format=json 2>/dev/null | executables |
        while read -r name exe; do cp "$exe" "$bundle/bin/$name"; done
    cp target/release/yee "$bundle/bin/yee"
    if [[ "$features" == *mpi* ]]; then bundle_openmpi; fi
    strip "$bundle"/bin/* 2>/dev/null || true
    # The shared libraries they link (HDF5 and what it pulls in; Open MPI's, hwloc, libevent,
    # PMIx), not the C library itself.
    for f in "$bundle"/bin/* "$bundle"/mpi/bin/* "$bundle"/mpi/lib/openmpi/*.so "$bundle"/mpi/pmix/lib/pmix/*.so; do
        if [ -f "$f" ]; then ldd "$f"; fi
    done | awk '/=>/ {print $3}' | sort -u |
        grep -v -E '/(libc|libm|libdl|libpthread|librt|libresolv|libgcc_s|ld-linux[^/]*)\.so' |
        while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
    strip --strip-unneeded "$bundle"/lib/*.so* "$bundle"/mpi/lib/openmpi/*.so "$bundle"/mpi/pmix/lib/pmix/*.so 2>/dev/null || true
    cp -r scenes "$bundle/"
    du -sh "$bundle"
    exit 0
fi

echo "== diagnostics"
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.max.memory --format=csv
else
    echo "nvidia-smi: not found"
fi
for t in cargo rustc nvcc c++ python3; do printf '%-8s %s\n' "$t" "$(command -v "$t" || echo '-')"; done
command -v nvcc >/dev/null && nvcc --version | tail -2
libcuda="$(ldconfig -p 2>/dev/null | awk '/libcuda\.so/ {print $NF; exit}')"
echo "libcuda  ${libcuda:-not in ldconfig}"

# NVRTC: cudarc loads libnvrtc.so (or .so.12, .so.11, ...) from the loader path. Take the first
# folder that has one; a CUDA 13 NVRTC has only .so.13, so link it as libnvrtc.so.
nvrtc_dirs=("${YEE_NVRTC_DIR:-}" /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib)
nvrtc_dirs+=(/usr/local/cuda-*/lib64 "$root"/.venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib)
nvrtc_dirs+=($(python3 -c 'import site,glob; print(" ".join(d for s in site.getsitepackages() for d in glob.glob(s + "/nvidia/*/lib")))' 2>/dev/null))
nvrtc=""
for d in "${nvrtc_dirs[@]}"; do
    [ -n "$d" ] && [ -d "$d" ] || continue
    f="$(ls "$d"/libnvrtc.so* 2>/dev/null | grep -v builtins | sort | tail -1)"
    if [ -n "$f" ]; then nvrtc="$f"; break; fi
done
shim="$(mktemp -d)"
if [ -n "$nvrtc" ]; then
    ln -sf "$nvrtc" "$shim/libnvrtc.so"
    export LD_LIBRARY_PATH="$shim:$(dirname "$nvrtc")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
echo "libnvrtc ${nvrtc:-not found}"

if [ "$mode" = "--bundle" ]; then
    bin="$bundle/bin"
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$bundle/lib"
    scenes="$bundle/scenes"
    declare -A exe=([cuda_backend]="$bin/cuda_backend" [nvrtc_kernels]="$bin/nvrtc_kernels" [host_kernels]="$bin/host_kernels" [checkpoint]="$bin/checkpoint")
    exe[host_ranks]="$bin/host_ranks"
    exe[mpi]="$bin/mpi"
    # The bundle's Open MPI (--make-bundle), where it has one: its mpirun first on the PATH (the
    # tests run `mpirun` by name), and its plugins, help texts and parameter file in place of the
    # folders it was built for, which that machine lacks.
    mpi_home="$bundle/mpi"
    if [ -x "$mpi_home/bin/mpirun" ] && [ -x "$bin/mpi" ]; then
        features="cuda,mpi" # for the MPI rows below, as a build with the `mpi` feature
        export PATH="$mpi_home/bin:$PATH"
        export OPAL_PREFIX="$mpi_home" OPAL_EXEC_PREFIX="$mpi_home" OPAL_BINDIR="$mpi_home/bin" OPAL_LIBDIR="$bundle/lib"
        export OPAL_PKGLIBDIR="$mpi_home/lib/openmpi" OPAL_DATAROOTDIR="$mpi_home/share" OPAL_DATADIR="$mpi_home/share"
        export OPAL_PKGDATADIR="$mpi_home/share/openmpi" OPAL_SYSCONFDIR="$mpi_home/etc"
        export PMIX_PREFIX="$mpi_home/pmix" PMIX_EXEC_PREFIX="$mpi_home/pmix" PMIX_LIBDIR="$mpi_home/pmix/lib"
        export PMIX_PKGLIBDIR="$mpi_home/pmix/lib/pmix" PMIX_DATAROOTDIR="$mpi_home/pmix/share" PMIX_DATADIR="$mpi_home/pmix/share"
        export PMIX_PKGDATADIR="$mpi_home/pmix/share/pmix" PMIX_SYSCONFDIR="$mpi_home/pmix/etc"
        # Named outright too: Debian's PMIx parameter file names its system plugin folder.
        export OMPI_MCA_mca_base_component_path="$mpi_home/lib/openmpi" PMIX_MCA_mca_base_component_path="$mpi_home/pmix/lib/pmix"
        # hwloc's optional plugins (PCI, OpenCL, ...) stay out: the machine's own, if any, are
        # built for another hwloc. The folder need not exist.
        export HWLOC_PLUGINS_PATH="$mpi_home/lib/hwloc"
        # For a sandboxed VM, as root: one node and loopback alone (no ssh needed, no other
        # interface tried); no single-copy (process_vm_readv, which a sandbox may refuse: the
        # shared-memory path copies twice instead); no binding to cores (a rank's threads
        # would share one core, and a VM's topology may refuse binding).
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        export OMPI_MCA_plm=isolated OMPI_MCA_rmaps_base_oversubscribe=1
        export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo
        export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none
    fi
else
    echo "== build"
    # With Open MPI installed (scripts/deps.sh), the `mpi` feature too: the runs over ranks on
    # the GPU below. One feature set for the binary and the tests (a second would rebuild yee).
    features="cuda,fault-injection" # the GPU failure test reads YEE_CUDA_FAIL_AT_STEP
    if command -v mpirun >/dev/null && pkg-config --exists ompi-c 2>/dev/null; then features="cuda,fault-injection,mpi"; fi
    cargo build --release --features "$features" --quiet || exit 1
    bin="$root/target/release"
    scenes="$root/scenes"
    declare -A exe=()
    while read -r name path; do exe[$name]="$path"; done < <(cargo test --release --features "$features" --no-run --message-format=json 2>/dev/null | executables)
fi
yee="$bin/yee"
out="$(mktemp -d)"
declare -a rows=()
row() { rows+=("$(printf '%-44s %-6s %s' "$1" "$2" "$3")"); }

echo "== yee devices"
"$yee" devices | tee "$out/devices.txt"
gpu="$(grep -m1 -E '^  0: ' "$out/devices.txt" | sed 's/^  0: //; s/, compute capability.*//')"
row "GPU 0" "" "${gpu:-none} | $(grep -m1 '^CUDA driver' "$out/devices.txt" | sed 's/CUDA driver: //')"
row "NVRTC" "" "$(grep -m1 '^NVRTC' "$out/devices.txt" | sed 's/NVRTC: //')"

run_tests() { # name, label, extra args
    local name="$1" label="$2"; shift 2
    if [ -n "${SKIP_TESTS:-}" ]; then row "$label" "SKIP" "SKIP_TESTS"; return; fi
    local path="${exe[$name]:-}"
    if [ -z "$path" ] || [ ! -x "$path" ]; then row "$label" "SKIP" "no $name test binary"; return; fi
    echo "== $label"
    timeout "${TEST_TIMEOUT:-240}" "$path" "$@" 2>&1 | tee "$out/$name.log"
    local status=${PIPESTATUS[0]}
    local summary
    summary="$(grep -E '^test result' "$out/$name.log" | tail -1 | sed 's/test result: //; s/; finished in/ in/')"
    if [ "$status" -eq 0 ]; then row "$label" "PASS" "$summary"; else row "$label" "FAIL" "$summary"; fi
}

export YEE_REQUIRE_NVRTC=1
export YEE_BIN="$yee"  # the binary the GPU tests run (cuda_backend's failure test)
run_tests nvrtc_kernels "NVRTC compiles every kernel (sm_80, sm_90)"
# Every ignored test of tests/cuda_backend.rs (a new GPU test, as the mode sources', runs here
# with no line of its own).
run_tests cuda_backend "CUDA vs CPU; 1/2/4 slabs; peer, staged halos" --ignored --test-threads=1
if command -v c++ >/dev/null; then
    run_tests host_kernels "host-compiled kernels vs CPU"
fi
run_tests checkpoint "checkpoint state CPU -> GPU -> CPU" --ignored the_state_goes_cpu_to_a_real_gpu
if command -v c++ >/dev/null; then
    run_tests host_ranks "host-compiled rank engines vs CPU, plan bytes"
fi

# Two result files' datasets in the named groups, bit for bit (read with h5py, from the
# repository's .venv or the system python3): prints "N of N datasets identical" or which differ.
same_bits() { # file a, file b, groups (comma-separated)
    local py="" p
    for p in "$root/.venv/bin/python" python3; do
        if "$p" -c 'import h5py' 2>/dev/null; then py="$p"; break; fi
    done
    if [ -z "$py" ]; then echo "no python with h5py"; return 2; fi
    "$py" - "$1" "$2" "$3" <<'PY'
import sys, h5py
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
groups = sys.argv[3].split(",")
names = []
a.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and n.split("/")[0] in groups else None)
bad = [n for n in names if n not in b or a[n][()].tobytes() != b[n][()].tobytes()]
print("%d of %d datasets identical%s" % (len(names) - len(bad), len(names), "; differ: " + ", ".join(bad[:4]) if bad else ""))
sys.exit(1 if bad or not names else 0)
PY
}

# A row for same_bits of two files: PASS, FAIL, or SKIP without h5py.
verdict() { # label, file a, file b, groups
    local v rc
    v="$(same_bits "$2" "$3" "$4")"; rc=$?
    case $rc in
        0) row "$1" "PASS" "$v" ;;
        2) row "$1" "SKIP" "$v" ;;
        *) row "$1" "FAIL" "${v:-no verdict}" ;;
    esac
}

# A B-scan on the GPU: traces per second from the scan's summary line ("scan: 60 of 60 traces in
# 1.23 s, 48.8 traces/s (8 at a time)"), with the plan's schedule (several traces at once on the
# GPU, each an engine of its own), with one trace at a time (`--threads 1`: one host thread), and
# on 2 CPU cores (the issue's reference: the GPU at 10x or more); the probes of all three bit for
# bit.
bscan_run() { # label, output name, args...
    local label="$1" name="$2"; shift 2
    echo "== yee run gpr_bscan.toml $*"
    if (cd "$out" && timeout 180 "$yee" run "$scenes/gpr_bscan.toml" --overwrite -o "$name.h5" "$@") 2>&1 | tee "$out/run-$name.log" &&
        grep -q '^scan: ' "$out/run-$name.log"; then
        row "$label" "" "$(grep '^scan: ' "$out/run-$name.log" | tail -1 | sed 's/^scan: //')"
    else
        row "$label" "FAIL" "see the log above"
    fi
}
bscan_run "gpr_bscan.toml (60 traces) on the GPU, the plan's schedule" gpr_bscan --backend cuda
bscan_run "  the same, one trace at a time (--threads 1)" gpr_bscan-one --backend cuda --threads 1
bscan_run "  the same on 2 CPU cores" gpr_bscan-cpu --backend cpu --threads 2
for other in gpr_bscan-one gpr_bscan-cpu; do
    verdict "  probes: several at once vs $other" "$out/gpr_bscan.h5" "$out/$other.h5" probes
done

echo "== yee run --backend cuda"
if (cd "$out" && timeout 60 "$yee" run "$scenes/dipole.toml" --backend cuda --slabs-per-gpu 2 -o dipole.h5 --quiet --overwrite); then
    row "yee run dipole.toml --backend cuda" "PASS" "2 slabs on GPU 0"
else
    row "yee run dipole.toml --backend cuda" "FAIL" "see the log above"
fi

# A run with monitors: throughput and the GPU's time per phase from the summary lines, e.g.
# "done: 3750000 cells x 1050 steps in 0.22 s: 18000.0 Mcells/s on cuda (GPU time: H 40%, E 45%,
# halos 0%, monitors 2%, checks 0%, idle 13%; checkpoint 0%) -> gpr.h5", then
# "passes (GPU time): H curl+cpml 38%, ...".
monitored_run() { # label, scene, extra args...
    local label="$1" scene="$2"; shift 2
    echo "== yee run $scene --backend cuda $*"
    local log="$out/run-$(basename "$scene" .toml).log"
    if (cd "$out" && timeout 180 "$yee" run "$scene" --backend cuda --overwrite -o "$(basename "$scene" .toml).h5" "$@") 2>&1 | tee "$log" &&
        grep -q '^done:' "$log"; then
        row "$label" "" "$(sed -n 's/^done: \([0-9]*\) cells x \([0-9]*\) steps in \([0-9.]*\) s: \([0-9.]*\) Mcells\/s on [a-z]* (\([^)]*\)).*/\4 Mcells\/s (\5) (\1 cells x \2 steps in \3 s)/p' "$log" | tail -1)"
        row "  its passes" "" "$(grep '^passes' "$log" | tail -1)"
    else
        row "$label" "FAIL" "see the log above"
    fi
}
monitored_run "yee run gpr.toml --backend cuda" "$scenes/gpr.toml"
monitored_run "yee run gpr_pipe.toml --backend cuda (Debye soil)" "$scenes/gpr_pipe.toml"
# A scene on the GPU (its throughput and passes) and on the CPU, every dataset of the result
# groups named bit for bit (read with h5py, from the repository's .venv or the system python3).
cpu_gpu_check() { # label, scene, groups (comma-separated)
    local label="$1" scene="$2" groups="$3" name v
    name="$(basename "$scene" .toml)"
    monitored_run "yee run $name.toml --backend cuda" "$scene"
    echo "== yee run $name.toml --backend cpu"
    if ! (cd "$out" && timeout 180 "$yee" run "$scene" --backend cpu --overwrite -o "$name-cpu.h5" --quiet); then
        row "$label" "FAIL" "the CPU run failed"; return
    fi
    verdict "$label" "$out/$name.h5" "$out/$name-cpu.h5" "$groups"
}
# The conformal PEC pass (conformal_h) on a cylinder cavity with conformal walls, f32: probes and
# snapshots.
cpu_gpu_check "conformal PEC: CUDA vs CPU bit for bit" "$scenes/conformal_cavity.toml" probes,snapshots
# Lumped circuits (the cells pass's `lumped` kernel, in the passes row): the port and series RLC
# of scenes/lumped_rlc.toml in f32, the ports' and elements' series and spectra.
sed 's/^precision = "f64"/precision = "f32"/' "$scenes/lumped_rlc.toml" > "$out/lumped_rlc_f32.toml"
cpu_gpu_check "lumped port + RLC: CUDA vs CPU bit for bit" "$out/lumped_rlc_f32.toml" ports,elements
# A Bloch cell (scenes/grating_oblique.toml: an oblique plane wave on a grating, Bloch-periodic
# along y, f64) on the GPU's pair of engines (kernels/bloch.cu, in the passes row) against the
# CPU's pair: the diffraction orders and the flux spectra bit for bit.
cpu_gpu_check "Bloch cell: CUDA pair vs CPU bit for bit" "$scenes/grating_oblique.toml" diffraction,flux
# The surface ports of a gold nanosphere's curved surface (kernels/ports.cu and the dispersive
# kernel over the ports, in the passes row's dispersive pass) on one GPU against the CPU (over logical
# GPUs trading their boundary ports: the cuda_backend tests above): the
# flux spectra bit for bit; then the same sphere staircased (`conformal = false`, no ports),
# whose throughput beside it is the ports' cost.
cpu_gpu_check "surface ports (gold sphere): CUDA vs CPU bit for bit" "$scenes/gold_sphere.toml" flux
sed 's/^gold = { library = "Au" }/gold = { library = "Au", conformal = false }/' "$scenes/gold_sphere.toml" > "$out/gold_sphere_staircase.toml"
monitored_run "yee run gold_sphere_staircase.toml --backend cuda (no ports)" "$out/gold_sphere_staircase.toml"
big="$out/monitors-1e8.toml"
cat > "$big" <<'TOML'
# 500 x 500 x 400 = 1e8 cells, 300 steps: a probe every step, a plane snapshot every 25 steps,
# a flux plane of 21 frequencies (its DFT decimated automatically).
[simulation]
name = "monitors-1e8"
length_unit = "mm"
cell_size = 1.0
size = [500.0, 500.0, 400.0]
steps = 300
precision = "f32"
[boundaries]
default = { type = "pml", cells = 10 }
[materials]
glass = { epsilon = 4.0 }
[[geometry]]
shape = "box"
material = "glass"
center = [0.0, 0.0, -100.0]
size = [600.0, 600.0, 200.0]
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 50.0]
waveform = { type = "gaussian", frequency = 5.0e9, bandwidth = 3.0e9 }
[[monitor]]
type = "probe"
name = "p"
position = [20.0, 0.0, 50.0]
components = ["Ez", "Hy"]
[[monitor]]
type = "snapshot"
name = "ez_xz"
components = ["Ez"]
plane = { y = 0.0 }
every = 25
[[monitor]]
type = "flux"
name = "down"
plane = { z = 0.0 }
frequencies = { min = 2.0e9, max = 8.0e9, count = 21 }
TOML
monitored_run "yee run 1e8 cells, probe+snapshot+flux" "$big"
# The same with the flux DFT sampled every step (decimation = 1) and with no monitors at all:
# what the automatic decimation saves, and what the monitors cost.
sed 's/^frequencies = \(.*\)$/frequencies = \1\ndecimation = 1/' "$big" > "$out/monitors-1e8-every.toml"
monitored_run "yee run 1e8 cells, flux every step" "$out/monitors-1e8-every.toml"
sed '/^\[\[monitor\]\]/,$d' "$big" > "$out/monitors-1e8-none.toml"
monitored_run "yee run 1e8 cells, no monitors" "$out/monitors-1e8-none.toml"
# The flux plane alone (auto decimation), over 300 and 600 steps: what it costs per step, and
# what it costs once (the accumulators' allocation, read-back and spectrum at the end).
{ cat "$out/monitors-1e8-none.toml"; sed -n '/^type = "flux"/,$p' "$big" | sed '1i [[monitor]]'; } > "$out/monitors-1e8-flux.toml"
monitored_run "yee run 1e8 cells, flux plane only" "$out/monitors-1e8-flux.toml"
sed 's/^steps = 300$/steps = 600/' "$out/monitors-1e8-flux.toml" > "$out/monitors-1e8-flux-600.toml"
monitored_run "yee run 1e8 cells, flux plane only, 600 steps" "$out/monitors-1e8-flux-600.toml"
sed 's/^steps = 300$/steps = 600/' "$out/monitors-1e8-none.toml" > "$out/monitors-1e8-none-600.toml"
monitored_run "yee run 1e8 cells, no monitors, 600 steps" "$out/monitors-1e8-none-600.toml"

# 2-D against 3-D at the same cell count (issue: a 2-D grid steps as many cells per second):
# 4096 x 4096 x 1 with z periodic against 256^3, both with a 10-cell PML, 500 steps.
flat="$out/flat-2d.toml"
cube="$out/cube-3d.toml"
for f in flat cube; do
    if [ "$f" = flat ]; then dims="4096.0, 4096.0, 1.0"; else dims="256.0, 256.0, 256.0"; fi
    cat > "$out/$( [ "$f" = flat ] && echo flat-2d || echo cube-3d ).toml" <<TOML
[simulation]
name = "$f"
length_unit = "mm"
cell_size = 1.0
size = [$dims]
steps = 500
precision = "f32"
[boundaries]
default = { type = "pml", cells = 10 }
$( [ "$f" = flat ] && printf 'z_min = { type = "periodic" }\nz_max = { type = "periodic" }' )
[[source]]
type = "dipole"
component = "Ez"
position = [0.0, 0.0, 0.0]
waveform = { type = "gaussian", frequency = 1.0e10, bandwidth = 5.0e9 }
TOML
done
monitored_run "yee run 2-D 4096 x 4096 x 1, PML" "$flat"
monitored_run "yee run 3-D 256^3, PML (same cells)" "$cube"

# One domain over MPI ranks on the GPU (built with the `mpi` feature): tests/mpi.rs (files bit
# for bit over 2 and 3 CPU ranks, and 2 ranks on the GPU against the single-process CPU run),
# then 2 ranks of one slab each on GPU 0 against one process of 2 slabs on it (the same split):
# what the ranks' halo path (GPU -> host -> MPI -> host -> GPU) costs.
if [[ "${features:-}" == *mpi* ]]; then
    run_tests mpi "MPI: 2/3 ranks bit for bit; 2 ranks on GPUs" --test-threads=1
    none="$out/monitors-1e8-none.toml"
    mpi_run() { # label, ranks, extra args...
        local label="$1" ranks="$2"; shift 2
        local log="$out/mpi-$ranks.log"
        echo "== mpirun -n $ranks yee run $(basename "$none") --backend cuda $*"
        if (cd "$out" && timeout 180 mpirun --allow-run-as-root --oversubscribe -n "$ranks" "$yee" run "$none" --backend cuda --overwrite -o "mpi-$ranks.h5" "$@") 2>&1 | tee "$log" &&
            grep -q '^done:' "$log"; then
            row "$label" "" "$(sed -n 's/^done: \([0-9]*\) cells x \([0-9]*\) steps in \([0-9.]*\) s: \([0-9.]*\) Mcells\/s.*/\4 Mcells\/s (\1 cells x \2 steps in \3 s)/p' "$log" | tail -1)"
        else
            row "$label" "FAIL" "see the log above"
        fi
    }
    mpi_run "mpirun -n 1, 1e8 cells, 2 slabs on GPU 0" 1 --slabs-per-gpu 2
    mpi_run "mpirun -n 2, 1e8 cells, 1 slab each on GPU 0" 2
else
    row "MPI ranks on the GPU" "SKIP" "no Open MPI (scripts/deps.sh), or none in the bundle"
fi

size="${BENCH_SIZE:-1000}"
steps="${BENCH_STEPS:-100}"
# One row per step mode the bench timed: Mcells/s and the fractions of the two-pass roofline
# (copy bandwidth / 18 values per cell-step) and the fused one (/ 12).
bench() { # label, args...
    local label="$1"; shift
    echo "== yee bench $*"
    local json
    if json="$(timeout 120 "$yee" bench --backend cuda --size "$size" --steps "$steps" --json "$@")"; then
        echo "$json"
        while IFS= read -r line; do
            row "$label, ${line%%|*}" "" "${line#*|}"
        done < <(python3 -c '
import json, sys
r = json.loads(sys.argv[1])
for m in r["modes"]:
    print("%s|%.0f Mcells/s, %.2f of the two-pass roofline, %.2f of the fused (copy %.2f TB/s)" % (m["mode"], m["mcells_per_s"], m["fraction_of_two_pass_roofline"], m["fraction_of_fused_roofline"], r["bandwidth_bytes_per_s"] / 1e12))
' "$json" 2>/dev/null || echo "?|$json")
    else
        row "$label" "FAIL" "yee bench $*"
    fi
}
bench "bench f32 ${size}^3, 1 slab" --precision f32
bench "bench f32 ${size}^3, PEC walls" --precision f32 --pec
bench "bench f32 ${size}^3, 4 slabs on one GPU" --precision f32 --slabs-per-gpu 4
bench "bench f64 ${size}^3, 1 slab" --precision f64
bench "bench f32 ${size}^3, half Drude-Lorentz metal" --precision f32 --metal

# A profile of the kernels that run below their roofline (when Nsight Compute is here; NCU=0
# skips it): per kernel its time, DRAM and L2 throughput as a share of peak, achieved occupancy
# and registers, on a 400^3 bench (the two-pass update, CPML, a Drude-Lorentz half) and on the flux-only 1e8 run cut to 30 steps, every step sampled.
if [ "${NCU:-1}" != 0 ] && command -v ncu > /dev/null; then
    metrics="gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,sm__throughput.avg.pct_of_peak_sustained_elapsed"
    profile() { # label, csv, command...
        local label="$1" csv="$2"; shift 2
        echo "== ncu $*"
        if timeout 240 ncu --csv --page raw --metrics "$metrics" --kernel-name regex:'update_|dispersive|flux_dft|cpml_x_e' --launch-skip 4 --launch-count 12 "$@" > "$csv" 2> "$csv.err"; then
            while IFS= read -r line; do row "  ncu $label ${line%%|*}" "" "${line#*|}"; done < <(python3 -c '
import csv, sys
# The output of the program itself shares stdout with the table: the header row starts with "ID", a
# row of units follows, then one row per launch.
rows = list(csv.reader(open(sys.argv[1])))
at = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
head = rows[at]
data = [r for r in rows[at + 2:] if len(r) == len(head) and r[0].isdigit()]
col = {n: i for i, n in enumerate(head)}
# Each kernel once: its longest launch (an interior, not a boundary plane).
g = lambda r, m: float(r[col[m]].replace(",", ""))
longest = {}
for r in data:
    k = r[col["Kernel Name"]].split("(")[0]
    if k not in longest or g(r, "gpu__time_duration.sum") > g(longest[k], "gpu__time_duration.sum"):
        longest[k] = r
for k, r in longest.items():
    g = lambda m, r=r: float(r[col[m]].replace(",", ""))
    print("%s|%.0f us, DRAM %.0f%%, L2 %.0f%%, SM %.0f%%, occupancy %.0f%%, %d registers" % (k, g("gpu__time_duration.sum") / 1e3, g("dram__throughput.avg.pct_of_peak_sustained_elapsed"), g("lts__throughput.avg.pct_of_peak_sustained_elapsed"), g("sm__throughput.avg.pct_of_peak_sustained_elapsed"), g("sm__warps_active.avg.pct_of_peak_sustained_active"), g("launch__registers_per_thread")))
' "$csv" 2>&1)
        else
            row "  ncu $label" "FAIL" "$(tail -3 "$csv.err" | tr '\n' ' ')"
        fi
    }
    profile "two-pass" "$out/ncu-two-pass.csv" "$yee" bench --backend cuda --size 400 --steps 3 --precision f32 --metal --two-pass
    sed 's/^steps = 300$/steps = 30/; s/^frequencies = \(.*\)$/frequencies = \1\ndecimation = 1/' "$out/monitors-1e8-flux.toml" > "$out/ncu-flux.toml"
    profile "flux 1e8" "$out/ncu-flux.csv" "$yee" run "$out/ncu-flux.toml" --backend cuda --overwrite -o "$out/ncu-flux.h5" --quiet
else
    row "ncu profile" "SKIP" "no ncu here (or NCU=0)"
fi
# Tuning variants, f32, 1 slab: the load pipeline off, other block sizes, fewer threads.
if [ -z "${SKIP_TUNING:-}" ]; then
    YEE_CUDA_PIPELINE=0 bench "  tuning: load pipeline off" --precision f32
    YEE_CUDA_BLOCK=128 bench "  tuning: 128 threads per block" --precision f32
    YEE_CUDA_BLOCK=512 bench "  tuning: 512 threads per block" --precision f32
    YEE_CUDA_TARGET_THREADS=4194304 bench "  tuning: 4M threads (longer x chunks)" --precision f32
fi

echo
echo "== gpu-check summary"
for r in "${rows[@]}"; do echo "$r"; done
if printf '%s\n' "${rows[@]}" | grep -q ' FAIL '; then exit 1; fi
