#!/usr/bin/env bash
# The launchers' own exchanges on this machine (issue 32, item 1), with no
# RAILCOLL_* variable and no store: tests/mp_launched.c (every collective,
# byte-checked) under Open MPI's mpirun (its PMIx server) and MPICH's Hydra
# (PMI-2). Before the PMIx / PMI-2 bootstrap both failed in railcoll_comm_init
# with "no store address". The same under srun is tests/test_slurm.sh.
set -u
LAUNCHED=${1:?mp_launched}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/check_lib.sh"
CHECK_TIMEOUT=300
clean=(env)
for v in $(compgen -e | grep '^RAILCOLL_'); do clean+=(-u "$v"); done
ok4="^rank [0-3] of 4 \(1 nodes, [0-9]+ rails\): [0-9]+ collectives correct$"
# Open MPI's own name for it: another MPI's mpirun may come first in PATH.
MPIRUN=$(command -v mpirun.openmpi || command -v mpirun)
if [ -n "$MPIRUN" ] && "$MPIRUN" --version 2>/dev/null | grep -qE "Open MPI|OpenRTE"; then
  check "Open MPI's mpirun -n 4 (PMIx): every collective byte-checked" "$ok4" 4 -- \
    "${clean[@]}" "$MPIRUN" --allow-run-as-root --oversubscribe -n 4 --mca btl self,vader,tcp \
    --mca mpi_yield_when_idle 1 "$LAUNCHED" 1
else
  fail=$((fail + 1)); echo "FAIL Open MPI's mpirun is not installed (scripts/install-deps.sh)"
fi
if command -v mpiexec.mpich >/dev/null; then
  check "MPICH's mpiexec.mpich -n 4 (Hydra, PMI-2): every collective byte-checked" "$ok4" 4 -- \
    "${clean[@]}" mpiexec.mpich -n 4 "$LAUNCHED" 1
else
  fail=$((fail + 1)); echo "FAIL MPICH's mpiexec.mpich is not installed (scripts/install-deps.sh)"
fi
summary
