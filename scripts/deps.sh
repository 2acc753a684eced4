#!/usr/bin/env bash
# Install what a fresh Debian machine lacks to build yee: the HDF5 library, pkg-config, g++
# (the kernel tests compile kernels/*.cu as C++ on the host), and Open MPI with libclang (the
# `mpi` feature's bindings; mpirun for its tests).
# Idempotent and quiet when everything is already there. Needs root (or sudo) only to install.
set -euo pipefail

missing=()
for pkg in libhdf5-dev pkg-config g++ libopenmpi-dev openmpi-bin libclang-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing system packages: ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
