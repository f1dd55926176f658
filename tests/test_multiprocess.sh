#!/usr/bin/env bash
# Multi-process tests with the local launcher: byte-exact all-gathers of every
# algorithm on one node, on pretend nodes (--ppn), uneven nodes and 1-3 rails;
# then bad input and faults, each of which must end in a clear error on every
# rank within the deadline; a mistake on one rank only (an argument, a
# variable) must end on every rank within seconds although the deadline is 60 s;
# and no shared-memory segment may be left behind.
set -u
RC=${1:?railcoll}; MP=${2:?mp_collectives}
. "$(dirname "$0")/check_lib.sh"
CHECK_TIMEOUT=300

for cfg in "1" "3" "4 --ppn 2" "8 --ppn 4 --rails 2" "6 --ppn 4 --rails 2" "5 --ppn 2 --rails 3" "7 --ppn 3 --rails 1"; do
  n=${cfg%% *}
  check "correct, -n $cfg" "calls correct" "$n" -- "$RC" run -n $cfg -- "$MP" correct
done

# Other launchers' variables: torchrun, Hydra and Slurm style (started by hand
# here), and a real Open MPI mpirun.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
by_hand() {  # by_hand RANKVAR SIZEVAR N extra-env... : N ranks in the background; fails if any does
  local rv=$1 sv=$2 n=$3 pids=() st=0; shift 3
  for r in $(seq 0 $((n - 1))); do env "$rv=$r" "$sv=$n" "$@" "$MP" correct & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || st=$?; done
  return $st
}
p=$(free_port)
check "torchrun variables" "calls correct" 3 -- bash -c "$(declare -f by_hand); MP=$MP; by_hand RANK WORLD_SIZE 3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p"
p=$(free_port)
check "torchrun variables, MASTER_ADDR=localhost" "calls correct" 2 -- bash -c "$(declare -f by_hand); MP=$MP; by_hand RANK WORLD_SIZE 2 MASTER_ADDR=localhost MASTER_PORT=$p"
if getent ahostsv4 "$(hostname)" >/dev/null; then
  p=$(free_port)
  check "torchrun variables, MASTER_ADDR=\$(hostname)" "calls correct" 2 -- bash -c "$(declare -f by_hand); MP=$MP; by_hand RANK WORLD_SIZE 2 MASTER_ADDR=$(hostname) MASTER_PORT=$p"
else
  echo "skip MASTER_ADDR=\$(hostname): '$(hostname)' does not resolve to an IPv4 address here"
fi
p=$(free_port)
check "no such host in MASTER_ADDR" "cannot resolve the store's host 'no-such-host.invalid'" 1 -- \
  env RANK=1 WORLD_SIZE=2 MASTER_ADDR=no-such-host.invalid MASTER_PORT=$p "$MP" nostore
p=$(free_port)
check "Hydra variables" "calls correct" 3 -- bash -c "$(declare -f by_hand); MP=$MP; by_hand PMI_RANK PMI_SIZE 3 RAILCOLL_STORE=127.0.0.1:$p"
p=$(free_port)
check "Slurm variables" "calls correct" 2 -- bash -c "$(declare -f by_hand); MP=$MP; by_hand SLURM_PROCID SLURM_NTASKS 2 RAILCOLL_STORE=127.0.0.1:$p"
if command -v mpirun.openmpi >/dev/null; then  # by its Debian name: PATH may hold another mpirun first
  p=$(free_port)
  check "Open MPI mpirun" "calls correct" 3 -- mpirun.openmpi --allow-run-as-root --oversubscribe -n 3 \
    -x RAILCOLL_STORE=127.0.0.1:$p -x RAILCOLL_RAILS=127.0.0.1 "$MP" correct
else
  fail=$((fail + 1)); echo "FAIL Open MPI mpirun: no mpirun.openmpi (scripts/install-deps.sh installs openmpi-bin)"
fi

export RAILCOLL_TIMEOUT=3
check "sizes differ between ranks" "allgather with mismatched sizes -> " 4 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" mismatch
check "bad arguments" "bad arguments rejected" 4 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" badargs
check "a peer exits in the middle" "dead peer -> a peer failed" 3 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" peer-exit
check "a replayed frame from an earlier call is refused" "replayed frame refused" 4 -- \
  env RAILCOLL_TEST_REPLAY_CALL=1 "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" replay
check "a deadline passes" "sleeping peer -> (deadline passed|a peer failed) after [3-7]\." 3 -- "$RC" run -n 4 --ppn 2 -- "$MP" deadline
# A rank away from railcoll for twice the rail timeout before each call (late,
# or in another library's turn): its peers' 16 MiB stand still in their links
# to it, which is no rail failure (it was given up once it answered again).
check "a rank 2.5 s late to every call (rail timeout 1 s): no rail given up, every call correct" \
  "steady [0-9]+ calls correct, 0 failed; rails up: fewest 2, at the end 2" 2 -- \
  "$RC" run -n 2 --ppn 1 --rails 2 -- env RAILCOLL_TIMEOUT=30 RAILCOLL_RAIL_TIMEOUT=1 MP_PAUSE_S=2.5 MP_PAUSE_RANK=1 "$MP" steady 16777216 direct 2
check --status 1 "unknown algorithm in the environment" "unknown allgather algorithm 'bogus' \(from RAILCOLL_ALLGATHER_ALGO" 2 -- \
  env RAILCOLL_ALLGATHER_ALGO=bogus "$RC" run --grace 5 -n 2 -- "$MP" correct  # every rank rejects it at init
check "two communicators from the environment in one process" "two communicators from the environment at once, and a third, correct" 4 -- \
  "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" twice
check "RAILCOLL_SHM_MIB too small: auto fits, byte-exact" "auto ran [a-z_]+ where the shared memory is too small, byte-exact; smp_direct named: not supported" 4 -- \
  env RAILCOLL_SHM_MIB=1 "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" shmfit
check "RAILCOLL_SHM_MIB too small: said once" "^railcoll: allgather: smp_multileader .* allows 1 MiB; running allgather/" 1 -- \
  env RAILCOLL_SHM_MIB=1 "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" shmfit

# A mistake on one rank only, with a 60 s deadline: within 5 s, the culprit
# gets its own error and every other rank one naming it (MP_WITHIN in
# mp_collectives; the times are printed).
export RAILCOLL_TIMEOUT=60
check "a bad argument on one rank, 13 kinds (-n 4 --ppn 2)" "one-rank mistakes: the culprit's own error" 4 -- \
  "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" onerank
check "a bad argument on one rank, 13 kinds (-n 5 --ppn 2, rank 0)" "one-rank mistakes: the culprit's own error" 5 -- \
  env MP_CULPRIT=0 "$RC" run -n 5 --ppn 2 --rails 2 -- "$MP" onerank
one_rank_env() {  # one_rank_env RANK VAR=VALUE: the command of a job where only that rank has it
  echo "'$RC' run --grace 20 -n 4 --ppn 2 --rails 2 -- sh -c '[ \$RAILCOLL_RANK = $1 ] && export $2; exec \"$MP\" correct'"
}
check --status 1 "an unknown algorithm in one rank's environment" \
  "(invalid argument: unknown allgather algorithm 'bogus' \(from RAILCOLL_ALLGATHER_ALGO|cannot create the communicator: rank 2 could not start: unknown allgather algorithm 'bogus').* \(after [0-4]\.[0-9]+ s\)" 4 -- \
  bash -c "$(one_rank_env 2 RAILCOLL_ALLGATHER_ALGO=bogus)"
check --status 1 "RAILCOLL_ALLGATHERV_ALGO in one rank's environment" \
  "(invalid argument|rank 0 could not start): RAILCOLL_ALLGATHERV_ALGO: there is no collective 'allgatherv'.* \(after [0-4]\.[0-9]+ s\)" 4 -- \
  bash -c "$(one_rank_env 0 RAILCOLL_ALLGATHERV_ALGO=smp_direct)"
check --status 1 "a negative RAILCOLL_NOTSENT_LOWAT in one rank's environment" \
  "RAILCOLL_NOTSENT_LOWAT='-5' is not a valid number \(after [0-4]\.[0-9]+ s\)" 4 -- \
  bash -c "$(one_rank_env 1 RAILCOLL_NOTSENT_LOWAT=-5)"
# Every write of a rail socket stops at the watermark: byte-exact all the same.
check "RAILCOLL_NOTSENT_LOWAT=1: correct" "calls correct" 4 -- \
  env RAILCOLL_NOTSENT_LOWAT=1 "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" correct
check --status 1 "a bad RAILCOLL_SHM_MIB in one rank's environment" \
  "(: |rank 3 could not start: )RAILCOLL_SHM_MIB='lots' is not a valid number \(after [0-4]\.[0-9]+ s\)" 4 -- \
  bash -c "$(one_rank_env 3 RAILCOLL_SHM_MIB=lots)"
export RAILCOLL_TIMEOUT=3
check "no store" "cannot reach the store" 1 -- \
  env RAILCOLL_RANK=1 RAILCOLL_SIZE=2 RAILCOLL_STORE=127.0.0.1:1 RAILCOLL_TIMEOUT=2 "$MP" nostore

check_no_shm_left

summary
