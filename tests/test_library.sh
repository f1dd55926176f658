#!/usr/bin/env bash
# The shipped libraries (docs/extending.md, "Layout"): librailcoll.so exports
# the C API alone, has a versioned SONAME, and carries no path of the machine
# it was built on; librailcoll.a defines no global symbol of its own but the
# C API (the C++ library's weak template code aside).
set -u
SO=${1:?path to librailcoll.so}
A=${2:?path to librailcoll.a}
SRC=$(realpath "${3:?source dir}")
BUILD=$(realpath "${4:?build dir}")
SANITIZE=${5:-}  # a sanitizer build keeps the sanitizers' source locations, full paths
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

exported=$(nm -D --defined-only "$SO" | awk '{print $NF}')
others=$(echo "$exported" | grep -v '^railcoll_')
n=$(echo "$exported" | grep -c '^railcoll_')
[ -z "$others" ] && ok "librailcoll.so exports only railcoll_* ($n symbols)" \
  || bad "librailcoll.so exports more than the C API: $(echo "$others" | head -5 | tr '\n' ' ')"
# Every function the header declares is exported.
header=$(dirname "$0")/../include/railcoll/railcoll.h
declared=$(grep -o 'railcoll_[a-z_]*(' "$header" | tr -d '(' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported" | sort -u))
[ -z "$missing" ] && ok "every declared function is exported" || bad "declared but not exported: $missing"

soname=$(readelf -d "$SO" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ "$soname" =~ ^librailcoll\.so\.[0-9]+$ ]] && ok "SONAME $soname" || bad "SONAME is '$soname'"

for lib in "$SO" "$A"; do
  [ -n "$SANITIZE" ] && { echo "skip source paths in $(basename "$lib"): built with -fsanitize=$SANITIZE"; continue; }
  paths=$(strings -a "$lib" | grep -F -e "$SRC" -e "$BUILD" | head -3)
  [ -z "$paths" ] && ok "no source or build path in $(basename "$lib")" || bad "$(basename "$lib") holds: $paths"
done

globals=$(nm -g --defined-only "$A" | awk 'NF == 3 && $2 !~ /^[WVwvu]$/ {print $3}' | grep -v '^railcoll_')
[ -z "$globals" ] && ok "librailcoll.a: only railcoll_* strong globals" \
  || bad "librailcoll.a defines: $(echo "$globals" | head -5 | tr '\n' ' ')"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
