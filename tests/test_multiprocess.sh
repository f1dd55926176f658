#!/usr/bin/env bash
# Multi-process tests with the local launcher: byte-exact all-gathers of every
# algorithm on one node, on pretend nodes (--ppn), uneven nodes and 1-3 rails;
# then bad input and faults, each of which must end in a clear error on every
# rank within the deadline; and no shared-memory segment may be left behind.
set -u
RC=${1:?railcoll}; MP=${2:?mp_collectives}
. "$(dirname "$0")/check_lib.sh"
CHECK_TIMEOUT=300
trap 'rm -f "$log"' EXIT

for cfg in "1" "3" "4 --ppn 2" "8 --ppn 4 --rails 2" "6 --ppn 4 --rails 2" "5 --ppn 2 --rails 3" "7 --ppn 3 --rails 1"; do
  n=${cfg%% *}
  check "correct, -n $cfg" "calls correct" "$n" -- "$RC" run -n $cfg -- "$MP" correct
done

# Other launchers' variables: torchrun, Hydra and Slurm style (started by hand
# here), and a real Open MPI mpirun.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
by_hand() {  # by_hand RANKVAR SIZEVAR N extra-env... : start N ranks in the background
  local rv=$1 sv=$2 n=$3; shift 3
  for r in $(seq 0 $((n - 1))); do env "$rv=$r" "$sv=$n" "$@" "$MP" correct & done
  wait
}
p=$(free_port)
check "torchrun variables" "calls correct" 3 -- bash -c "$(declare -f by_hand); MP=$MP; by_hand RANK WORLD_SIZE 3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p"
p=$(free_port)
check "Hydra variables" "calls correct" 3 -- bash -c "$(declare -f by_hand); MP=$MP; by_hand PMI_RANK PMI_SIZE 3 RAILCOLL_STORE=127.0.0.1:$p"
p=$(free_port)
check "Slurm variables" "calls correct" 2 -- bash -c "$(declare -f by_hand); MP=$MP; by_hand SLURM_PROCID SLURM_NTASKS 2 RAILCOLL_STORE=127.0.0.1:$p"
if command -v mpirun >/dev/null; then
  p=$(free_port)
  check "Open MPI mpirun" "calls correct" 3 -- mpirun --allow-run-as-root --oversubscribe -n 3 \
    -x RAILCOLL_STORE=127.0.0.1:$p -x RAILCOLL_RAILS=127.0.0.1 "$MP" correct
fi

export RAILCOLL_TIMEOUT=3
check "sizes differ between ranks" "allgather with mismatched sizes -> " 4 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" mismatch
check "bad arguments" "bad arguments rejected" 4 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" badargs
check "a peer exits in the middle" "dead peer -> a peer failed" 3 -- "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" peer-exit
check "a replayed frame from an earlier call is refused" "replayed frame refused" 4 -- \
  env RAILCOLL_TEST_REPLAY_CALL=1 "$RC" run -n 4 --ppn 2 --rails 2 -- "$MP" replay
check "a deadline passes" "sleeping peer -> (deadline passed|a peer failed) after [3-7]\." 3 -- "$RC" run -n 4 --ppn 2 -- "$MP" deadline
check "unknown algorithm in the environment" "unknown allgather algorithm 'bogus' \(from RAILCOLL_ALLGATHER_ALGO" 2 -- \
  env RAILCOLL_ALLGATHER_ALGO=bogus "$RC" run --grace 5 -n 2 -- "$MP" correct  # every rank rejects it at init
check "no store" "cannot reach the store" 1 -- \
  env RAILCOLL_RANK=1 RAILCOLL_SIZE=2 RAILCOLL_STORE=127.0.0.1:1 RAILCOLL_TIMEOUT=2 "$MP" nostore

left=$(ls /dev/shm 2>/dev/null | grep -c '^railcoll-')
if [ "$left" -eq 0 ]; then pass=$((pass + 1)); echo "ok   no shared-memory segments left"
else fail=$((fail + 1)); echo "FAIL $left railcoll segments left in /dev/shm"; fi

summary
