#!/usr/bin/env bash
# One command for issue 33's numbers on one node (docs/torch.md,
# "Tensor-parallel inference", "Sharded training"): the reduction kernels'
# GB/s, tensor-parallel all-reduces of 8 KiB-32 MiB in bfloat16 and float32 on
# 2 and 4 ranks (railcoll, gloo and, when it is installed, DeepSpeed's
# shared-memory all-reduce, taking turns round by round), the decode loop's
# tokens/s, and FSDP2's steps/s against gloo. Every result goes to OUT
# (default results/torch-bench-<time>) as JSON, with the load average before
# and after each part. Run it on a quiet machine:
#     scripts/torch-bench.sh [BUILD_DIR] [OUT]
set -eu
BUILD=$(cd "${1:-build}" && pwd)
OUT=${2:-results/torch-bench-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
export PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}"
export RAILCOLL_RAILS=${RAILCOLL_RAILS:-127.0.0.1}
PY=${PYTHON:-python3}
backends=railcoll,gloo
if DS_ACCELERATOR=cpu "$PY" -c "import deepspeed" 2>/dev/null; then backends=$backends,deepspeed; fi
load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)  ($1)" | tee -a "$OUT/load.txt"; }
run() {  # run NAME NPROC ARGS...: torchrun of railcoll.examples.ARGS, its output kept
  local name=$1 n=$2; shift 2
  load "before $name"
  "$PY" -m torch.distributed.run --standalone --nproc-per-node "$n" -m "$@" | tee "$OUT/$name.txt"
  load "after $name"
}
load "start"
"$BUILD/bin/railcoll" bench --reduce | tee "$OUT/reduce-kernels.txt"
for n in 2 4; do
  run "tp-sweep-$n" "$n" railcoll.examples.tp_decode --sweep --backends "$backends" --rounds 5 \
    --json "$OUT/tp-sweep-$n.json"
  run "tp-decode-$n" "$n" railcoll.examples.tp_decode --backends "$backends" --rounds 5 \
    --json "$OUT/tp-decode-$n.json"
done
run fsdp-4 4 railcoll.examples.fsdp --backends railcoll,gloo,railcoll,gloo --json "$OUT/fsdp-4.json"
echo "results in $OUT"
