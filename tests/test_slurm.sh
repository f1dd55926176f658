#!/usr/bin/env bash
# Slurm on the emulated cluster (issue 32): `railcoll cluster up --slurm`
# brings up Debian's slurmctld, a slurmd in each of 4 nodes (4 CPUs, 2 rails)
# and munge; then, with no RAILCOLL_* variable in any job, as a user would:
#  * a railcoll C program (tests/mp_launched.c: every collective of the C API,
#    every byte checked) with srun -N 4 -n 16 --mpi=pmix, and --mpi=pmi2: the
#    launcher's exchange sets the communicator up, no store;
#  * the same from an sbatch script (docs/runtime.md shows it);
#  * srun without --mpi: every rank refused, saying to add --mpi=pmix;
#  * an MPI program (tests/mpi/mpi_collectives.c, Open MPI as Debian ships it)
#    with librailcoll_mpi.so preloaded, direct-launched by srun --mpi=pmix;
#    once more with the layer's report, every rank's MPI_Allgather railcoll's;
#  * the torch backend (tests/torch/ops.py): one torchrun per node under srun,
#    rendezvous at the first node's name.
# Under the cluster lock; the cluster and Slurm are taken down on every exit.
set -u
RC=${1:?railcoll}; LAUNCHED=${2:?mp_launched}; MPIPROG=${3:-}; LAYER=${4:-}; PY=${5:-}; PYDIR=${6:-}
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ]; then echo "SKIPPED: needs root (network namespaces, Slurm's daemons)"; exit 77; fi
for p in srun sbatch slurmctld slurmd munged; do
  command -v "$p" >/dev/null || [ -x "/usr/sbin/$p" ] ||
    { echo "SKIPPED: $p is not installed (scripts/install-deps.sh installs Slurm)"; exit 77; }
done
. "$HERE/check_lib.sh"
. "$HERE/cluster_lock.sh"
CHECK_TIMEOUT=400
tmp=$(mktemp -d /run/railcoll-slurm-test.XXXXXX)  # every node sees it: one file system
cluster_lock
cleanup() { "$RC" cluster down >/dev/null 2>&1; rm -rf "$log" "$tmp"; }
trap cleanup EXIT
"$RC" cluster down >/dev/null 2>&1
if ! "$RC" cluster up --nodes 4 --ppn 4 --rails 2 --rate 1gbit --slurm >"$log" 2>&1; then
  fail=$((fail + 1)); echo "FAIL cluster up --slurm"; cat "$log"; summary; exit 1
fi
pass=$((pass + 1)); echo "ok   cluster up --slurm: $(grep -c . "$log") lines said"
export SLURM_CONF=/run/railcoll/slurm/slurm.conf
# Nothing of railcoll's reaches a job (RAILCOLL_CLUSTER_LOCKED is this test's lock).
clean=(env)
for v in $(compgen -e | grep '^RAILCOLL_'); do clean+=(-u "$v"); done

check "sinfo: 4 nodes idle, 4 CPUs, rails as features" "^rc-n[0-3] idle 4 rail0,rail1$" 4 -- \
  sinfo --noheader --Node --format="%N %T %c %f"
ok16="^rank [0-9]+ of 16 \(4 nodes, 2 rails\): [0-9]+ collectives correct$"
check "srun -N 4 -n 16 --mpi=pmix: every collective byte-checked, set up through PMIx" "$ok16" 16 -- \
  "${clean[@]}" srun -N 4 -n 16 --mpi=pmix "$LAUNCHED" 4
check "srun -N 4 -n 16 --mpi=pmi2: the same through PMI-2" "$ok16" 16 -- \
  "${clean[@]}" srun -N 4 -n 16 --mpi=pmi2 "$LAUNCHED" 4
check --status 1 "srun without --mpi: every rank refused, told to give --mpi=pmix" "under srun --mpi=pmix" 16 -- \
  "${clean[@]}" srun -N 4 -n 16 --mpi=none "$LAUNCHED" 4

cat >"$tmp/job.sh" <<EOS
#!/bin/bash
#SBATCH --nodes=4 --ntasks-per-node=4 --time=10
srun --mpi=pmix $LAUNCHED 4
EOS
check "sbatch --wait: the job script's srun --mpi=pmix, 16 ranks correct" "$ok16" 16 -- \
  sh -c "$(printf '%q ' "${clean[@]}") sbatch --wait --output=$tmp/job.out $tmp/job.sh >/dev/null && cat $tmp/job.out"

if [ -n "$MPIPROG" ] && [ -n "$LAYER" ]; then
  # No vader (Open MPI's shared memory) and no PSM: under srun its start-up
  # failed now and then in full runs ("A system call failed during shared
  # memory initialization ... open(2) No such file or directory" on one node,
  # then SIGSEGV), the emulated nodes sharing one /tmp and /dev/shm. The
  # collectives are the layer's; Open MPI's own messages go over TCP, on
  # rail 0 alone: given both rails' subnets it tried rail 1's address from
  # rail 0's ("failed to TCP connect to a peer ... connect() to 198.18.1.1
  # failed: Operation now in progress", then SIGSEGV; a clean-clone run).
  ompi=(OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_mtl=^psm,psm2 OMPI_MCA_btl_tcp_if_include=198.18.0.0/24
        OMPI_MCA_mpi_yield_when_idle=1)
  # One job, both checks on its output (two back to back failed the same way).
  # Open MPI 4.1.4's own TCP wire-up still fails now and then here, rail 0
  # alone ("failed to TCP connect to a peer ... connect() to 198.18.0.4
  # failed: Operation now in progress", then SIGSEGV; a clean-clone run of
  # 2026-11-29): 4.1.x reports the real connect error as EINPROGRESS until
  # open-mpi/ompi#13110, and its maintainers put such failures down to a
  # loaded node's connection wave (#11508). That job is run once more, saying
  # so; any other failure, or that one twice, fails the check.
  check "Open MPI program, librailcoll_mpi.so preloaded, srun -N 4 -n 16 --mpi=pmix: every byte right" \
    "^collectives correct: 0 wrong" 1 -- \
    sh -c 'for try in 1 2; do "$@" >"$0" 2>&1; st=$?
      [ $st != 0 ] && [ $try = 1 ] && grep -q "Open MPI failed to TCP connect to a peer" "$0" || break
      echo "note: Open MPI'"'"'s own TCP wire-up failed ($(grep -m1 -o "connect() to .* failed" "$0")); the job runs once more"
      done; cat "$0"; exit $st' "$tmp/ompi.out" \
    "${clean[@]}" "${ompi[@]}" srun -N 4 -n 16 --mpi=pmix --export="ALL,LD_PRELOAD=$LAYER,RAILCOLL_MPI_VERBOSE=1" \
    "$MPIPROG"
  check "... and its MPI_Allgather calls were railcoll's on all 16 ranks (the layer's report)" \
    "^railcoll-mpi: rank [0-9]+: MPI_Allgather railcoll=[1-9][0-9]* mpi=0" 16 -- cat "$tmp/ompi.out"
else
  fail=$((fail + 1)); echo "FAIL no Open MPI program or MPI layer was built (scripts/install-deps.sh installs Open MPI)"
fi

if [ -n "$PY" ] && [ -n "$PYDIR" ] && "$PY" -c "import torch" 2>/dev/null; then
  TR=$(dirname "$(command -v "$PY")")/torchrun
  [ -x "$TR" ] || TR=torchrun
  check "torch: one torchrun per node under srun -N 4, rendezvous at rc-n0" \
    "^torch ops: [0-9]+ checks passed on 4 ranks" 1 -- \
    "${clean[@]}" PYTHONPATH="$PYDIR" srun -N 4 --ntasks-per-node=1 --cpus-per-task=4 \
    sh -c "exec $TR --nnodes 4 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint rc-n0:29400 \
           --rdzv-id \$SLURM_JOB_ID $HERE/torch/ops.py"
else
  fail=$((fail + 1)); echo "FAIL torch is not installed for '$PY' (scripts/install-deps.sh installs it)"
fi

check "cluster down takes Slurm down too: no daemon left" "^gone$" 1 -- \
  sh -c "'$RC' cluster down >/dev/null && ! pgrep -x slurmctld >/dev/null && ! pgrep -x slurmd >/dev/null && \
         [ ! -e /run/railcoll/slurm ] && echo gone"
summary
