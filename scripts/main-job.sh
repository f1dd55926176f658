#!/usr/bin/env bash
# `make run`: the project's main job. Brings up the default emulated cluster
# (4 nodes x 4 ranks, 2 rails x 1 Gbit/s), benchmarks every all-gather algorithm
# and Open MPI's MPI_Allgather (tuned and HAN) on it from 8 B to 1 MiB per rank,
# validating every byte, prints the summary, writes results/ and takes the
# cluster down again. Without root it uses the local launcher instead.
set -euo pipefail
cd "$(dirname "$0")/.."
RC=build/bin/railcoll
mkdir -p results
out=(--json results/allgather.json --csv results/allgather.csv --plot results/allgather.png)

"$RC" show allgather --algo bruck --ranks 9 --rails 2 | tail -4
"$RC" verify --all | tail -1

if [ "$(id -u)" = 0 ]; then
  "$RC" cluster down >/dev/null 2>&1 || true
  trap '"$RC" cluster down >/dev/null 2>&1 || true' EXIT
  "$RC" cluster up --nodes 4 --ppn 4 --rails 2 --rate 1gbit
  "$RC" bench allgather --algo all -m 8:1M -c --mpi "${out[@]}" | tee results/allgather.txt
else
  echo "make run: not root, so no emulated cluster (network namespaces need root);"
  echo "          running 8 local processes in 2 pretend nodes with 2 loopback rails instead"
  "$RC" bench allgather --algo all -m 8:1M -c --mpi --local -n 8 --ppn 4 --rails 2 "${out[@]}" | tee results/allgather.txt
fi
