#!/usr/bin/env bash
# The pip package (issue 32): `pip wheel ./python` builds the C library and the
# torch extension into one wheel with scikit-build-core, writing nothing into
# the source tree; the wheel installs into a new virtual environment (with the
# system's site packages, so the installed torch comes along, not 3 GB again)
# and a two-process torch job runs from there, `import railcoll` finding its
# own librailcoll (rpath $ORIGIN) with no PYTHONPATH, no LD_LIBRARY_PATH and
# the source tree out of reach.
# The wheel's CMake build is a build of its own from the source tree, in
# BUILD_DIR-wheel (beside BUILD_DIR, so ccache sees the same relative paths),
# of BUILD_DIR's build type: its compilations come from ccache where
# BUILD_DIR's put them there (CMakeLists.txt), and the test says how many.
#   usage: test_wheel.sh SOURCE_DIR BUILD_DIR PYTHON [BUILD_TYPE]
set -u
SRC=${1:?source dir}; BUILD=${2:?build dir}; PY=${3:?python}; TYPE=${4:-Release}
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }
if ! "$PY" -c "import torch, scikit_build_core" 2>/dev/null; then
  echo "SKIPPED: $PY lacks torch or scikit-build-core (scripts/install-deps.sh installs both)"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
marker=$tmp/marker
touch "$marker"
sleep 1  # a file written in the same second as the marker still counts as newer below

# The venv has the system's packages (torch, scikit-build-core): no download.
"$PY" -m venv --system-site-packages "$tmp/venv" || { bad "python -m venv"; finish; }
VPY=$tmp/venv/bin/python
# The build directory is kept, so a second run is incremental. BUILD_DIR's
# compilers by the same names (ccache hashes the name: pip would ask for
# Python's own, gcc and g++, where BUILD_DIR has cc and c++).
stats=$tmp/ccache-stats
compilers=()
for lang in C CXX; do
  c=$(sed -n "s/^CMAKE_${lang}_COMPILER:[A-Z]*=//p" "$BUILD/CMakeCache.txt" 2>/dev/null)
  [ -n "$c" ] && compilers+=("--config-settings=cmake.define.CMAKE_${lang}_COMPILER=$c")
done
if (cd "$tmp" && env -u PYTHONPATH -u CC -u CXX CCACHE_STATSLOG="$stats" "$VPY" -m pip wheel --no-build-isolation \
      --no-deps -w "$tmp/dist" --config-settings=build-dir="$BUILD-wheel" --config-settings=cmake.build-type="$TYPE" \
      "${compilers[@]}" "$SRC/python") >"$tmp/build.log" 2>&1; then
  cached=$(CCACHE_STATSLOG=$stats ccache --show-log-stats 2>/dev/null |
           awk '/^ *Hits:/ {print $2, "of", $4; exit}')
  ok "pip wheel ./python (scikit-build-core: the C library and the extension; $TYPE, compilations from ccache: ${cached:-none})"
else
  bad "pip wheel ./python:"; tail -30 "$tmp/build.log"; finish
fi
wheel=$(ls "$tmp"/dist/railcoll-*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] && ok "a wheel: $(basename "$wheel")" || { bad "no wheel in $tmp/dist"; finish; }

written=$(find "$SRC/python" -newer "$marker" -print 2>/dev/null | grep -v '/__pycache__' | head -5)
[ -z "$written" ] && ok "nothing written under python/ (no egg-info, no build/)" || bad "the build wrote into the source tree: $written"

list=$("$VPY" -c "import sys, zipfile; print('\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))" "$wheel")
for want in 'railcoll/__init__.py' 'railcoll/_build.py' 'railcoll/librailcoll.so.0' 'railcoll/_C\..*\.so'; do
  grep -qx "$want" <<<"$list" && ok "the wheel holds $want" || bad "the wheel lacks $want: $(tr '\n' ' ' <<<"$list")"
done
grep -q 'csrc' <<<"$list" && bad "the wheel carries the C++ sources" || ok "no sources in the wheel"

"$VPY" -m pip install --no-deps --no-index -q "$wheel" >"$tmp/install.log" 2>&1 &&
  ok "pip install the wheel into the venv" || { bad "pip install:"; cat "$tmp/install.log"; finish; }
site=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
ext=$(ls "$site"/railcoll/_C*.so 2>/dev/null | head -1)
runpath=$(readelf -d "$ext" 2>/dev/null | grep -oE '(RUNPATH|RPATH).*\[.*\]' | sed 's/.*\[\(.*\)\]/\1/')
[ "$runpath" = '$ORIGIN' ] && ok "the extension finds librailcoll by \$ORIGIN alone" || bad "the extension's run path is '$runpath'"

# A job from the venv, away from the source and build trees.
cat >"$tmp/job.py" <<'EOS'
import os, sys
import torch
import torch.distributed as dist
import railcoll
assert os.path.realpath(railcoll.__file__).startswith(os.path.realpath(sys.prefix)), railcoll.__file__
dist.init_process_group("railcoll")
rank, size = dist.get_rank(), dist.get_world_size()
t = torch.arange(1000, dtype=torch.int64) * (rank + 1)
dist.all_reduce(t)
assert torch.equal(t, torch.arange(1000, dtype=torch.int64) * sum(range(1, size + 1))), "all_reduce"
out = [torch.empty(7, dtype=torch.float32) for _ in range(size)]
dist.all_gather(out, torch.full((7,), float(rank)))
assert all(torch.equal(o, torch.full((7,), float(r))) for r, o in enumerate(out)), "all_gather"
b = torch.arange(33, dtype=torch.uint8) if rank == 1 else torch.zeros(33, dtype=torch.uint8)
dist.broadcast(b, src=1)
assert torch.equal(b, torch.arange(33, dtype=torch.uint8)), "broadcast"
# One write with its newline: print's text and end are two writes when
# unbuffered, and the other rank's line came in between (a CI failure).
os.write(1, ("wheel job: rank %d of %d correct, railcoll from %s\n" % (rank, size, os.path.dirname(railcoll.__file__))).encode())
dist.destroy_process_group()
EOS
(cd "$tmp" && env -u PYTHONPATH -u LD_LIBRARY_PATH timeout 300 "$VPY" -m torch.distributed.run --standalone \
   --nproc-per-node 2 "$tmp/job.py") >"$tmp/job.log" 2>&1
n=$(grep -c "^wheel job: rank [01] of 2 correct, railcoll from $site/railcoll" "$tmp/job.log")
[ "$n" = 2 ] && ok "a two-process torch job from the venv: all_reduce, all_gather, broadcast exact" ||
  { bad "the torch job from the venv ($n of 2 ranks):"; tail -20 "$tmp/job.log"; }
finish
