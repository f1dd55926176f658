#!/usr/bin/env bash
# The long soak (`make soak`, `make soak BUILD=build-asan` for the sanitizers):
# CALLS (default 10000) mixed, validated collectives on the emulated cluster
# (4 nodes x 4 ranks, 2 rails at 1gbit; without root: 8 local ranks), open
# files and RSS per rank sampled and compared (tests/test_soak.sh). Holds
# /tmp/railcoll-cluster.lock while the cluster is up and takes it down on any exit.
#   usage: scripts/soak.sh [BUILD_DIR] [CALLS] [SEED]
set -u
BUILD=${1:-build}; CALLS=${2:-10000}; SEED=${3:-1}
HERE=$(cd "$(dirname "$0")/.." && pwd)
RC=$(cd "$BUILD" && pwd)/bin/railcoll; MP=$(dirname "$RC")/mp_collectives
if [ "$(id -u)" != 0 ]; then
  echo "soak: not root, so no emulated cluster: 8 local ranks"
  exec "$HERE/tests/test_soak.sh" "$RC" "$MP" "$CALLS" local "$SEED"
fi
exec 9>/tmp/railcoll-cluster.lock
flock 9
trap '"$RC" cluster down >/dev/null 2>&1' EXIT
"$RC" cluster down >/dev/null 2>&1
"$RC" cluster up --nodes 4 --ppn 4 --rails 2 --rate 1gbit || exit 1
"$HERE/tests/test_soak.sh" "$RC" "$MP" "$CALLS" cluster "$SEED"
