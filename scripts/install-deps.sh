#!/usr/bin/env bash
# Installs what railcoll needs on a Debian machine, and only what is missing.
# Called by `make build|run|test`; safe to run again (it checks before it installs).
set -euo pipefail

# clang + libclang-rt-14-dev: libFuzzer and the sanitizers' runtimes for tests/fuzz.
# nlohmann-json3-dev: the tuning file (src/select) and bench records; pkg-config: the install test.
# libssl-dev: libcrypto's HMAC-SHA256 for the runtime's job authentication.
# mpich + libmpich-dev: the MPICH-ABI build of the MPI interposition library (src/mpi) and its tests;
# python3-mpi4py + python3-numpy: the mpi4py test of it (Debian's mpi4py is built on Open MPI).
# libfabric-dev: the libfabric (OFI) transport, RAILCOLL_TRANSPORT=ofi (-DRAILCOLL_WITH_OFI=OFF builds without).
# gfortran: the Fortran test programs of the MPI layer (mpifort of both MPIs, tests/mpi).
# slurmctld slurmd slurm-client munge: Slurm on the emulated cluster (railcoll cluster slurm up); Debian's
# slurm-wlm-basic-plugins, which they pull in, has the mpi/pmix and mpi/pmi2 plugins (srun --mpi=pmix|pmi2).
# libpmix-dev: the PMIx bootstrap (pmix.h; libpmix is loaded when a PMIx server started the process);
# libpmi2-0-dev: Slurm's PMI-2 client header, for the same where only PMI-2 is offered.
# ccache: a second build of the same sources (the wheel test's `pip wheel ./python`, another checkout)
# compiles from the cache (CMakeLists.txt sets it up).
debian_packages=(cmake g++ make ninja-build libgtest-dev iproute2 util-linux
                 openmpi-bin libopenmpi-dev python3 python3-pip clang libclang-rt-14-dev
                 nlohmann-json3-dev pkg-config libssl-dev mpich libmpich-dev python3-mpi4py python3-numpy
                 libfabric-dev gfortran slurmctld slurmd slurm-client munge libpmix-dev libpmi2-0-dev ccache)
# Python modules as "import name:PyPI name". scikit-build-core: the build backend of
# python/pyproject.toml, here for builds without pip's isolation (the wheel test).
python_modules=(matplotlib jsonschema scikit_build_core:scikit-build-core)

missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

py=$(command -v python3)
for entry in "${python_modules[@]}"; do
  m=${entry%%:*} pkg=${entry#*:}
  if ! "$py" -c "import $m" 2>/dev/null; then
    echo "install-deps: installing Python module $pkg"
    "$py" -m pip install -q "$pkg" 2>/dev/null || "$py" -m pip install -q --break-system-packages "$pkg"
  fi
done

# torch, for the torch.distributed backend (python/, docs/torch.md), into the same
# python3 as the modules above (the first in PATH: it has its development headers
# for the C++ extension and needs no --break-system-packages). Only PyPI is
# reachable, so its default Linux wheel: ~3 GB with the GPU runtime wheels it
# requires (torch without them does not import: libcudart is loaded at start).
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "install-deps: installing torch (PyPI's Linux wheel, about 3 GB; once)"
  "$py" -m pip install -q torch 2>/dev/null || "$py" -m pip install -q --break-system-packages torch
fi
# The extension's build needs that Python's headers (Debian's python3 has them in python3-dev).
if [ ! -f "$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: $py has no development headers (Debian: python3-dev; run as root)" >&2
    exit 1
  fi
  echo "install-deps: installing python3-dev"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-dev >/dev/null
fi

# Intel oneCCL's CPU build, a peer of railcoll bench (--peer oneccl, tools/oneccl_bench/):
# PyPI's oneccl-cpu and oneccl-cpu-devel with the Intel runtime libraries they
# need (intel-cmplr-lib-rt: libintlc). Into a prefix of its own, never the
# Python's: oneccl-cpu requires Intel MPI (impi-rt), whose mpirun would
# otherwise come before Open MPI's in PATH. CMake finds it there
# (RAILCOLL_ONECCL_PREFIX); RAILCOLL_NO_ONECCL=1 leaves it out.
oneccl_prefix=${RAILCOLL_ONECCL_PREFIX:-/opt/railcoll-oneccl}
if [ -z "${RAILCOLL_NO_ONECCL:-}" ] && [ ! -f "$oneccl_prefix/include/oneapi/ccl.hpp" ]; then
  echo "install-deps: installing oneCCL (oneccl-cpu, oneccl-cpu-devel) into $oneccl_prefix"
  "$py" -m pip install -q --prefix "$oneccl_prefix" oneccl-cpu oneccl-cpu-devel intel-cmplr-lib-rt 2>/dev/null ||
    "$py" -m pip install -q --break-system-packages --prefix "$oneccl_prefix" oneccl-cpu oneccl-cpu-devel \
      intel-cmplr-lib-rt
fi
