#!/usr/bin/env bash
# Installs railcoll into a temporary prefix and builds a program against it the
# ways a user would (README, "Using it"): with pkg-config, with CMake's
# find_package(railcoll), and statically with librailcoll.a; each one runs a
# one-rank communicator (tests/install/consumer.c).
set -u
BUILD=${1:?build dir}
SRC=${2:?source dir}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
# run "description" command...: the consumer must print its ok line.
run() {
  local what=$1; shift
  if env RAILCOLL_SIZE=1 RAILCOLL_RANK=0 RAILCOLL_EXPECT_ALGORITHMS="$algorithms" timeout 60 "$@" >"$tmp/out" 2>&1 && grep -q "^consumer: railcoll .* ok$" "$tmp/out"; then
    ok "$what"
  else
    bad "$what: $(head -5 "$tmp/out")"
  fi
}

if ! cmake --install "$BUILD" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  cat "$tmp/install.log"
  echo "FAIL cmake --install"
  exit 1
fi
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name railcoll.pc | head -1)")
libdir=$(pkg-config --variable=libdir railcoll)
version=$(pkg-config --modversion railcoll)
[ -n "$libdir" ] && [ "$libdir" != "${libdir#$prefix/}" ] && ok "pkg-config finds railcoll $version in the prefix" \
  || bad "pkg-config: libdir '$libdir' is not under $prefix"
grep -q "RAILCOLL_VERSION_STRING \"$version\"" "$prefix/include/railcoll/version.h" && ok "version.h says $version" \
  || bad "version.h does not say $version"
[ -f "$libdir/librailcoll.so.$version" ] && [ "$(readlink "$libdir/librailcoll.so.${version%%.*}")" = "librailcoll.so.$version" ] \
  && ok "librailcoll.so.$version and its SONAME link" || bad "no librailcoll.so.$version / .so.${version%%.*} link"
ar t "$libdir/librailcoll.a" >/dev/null 2>&1 && ok "librailcoll.a is an archive" || bad "no librailcoll.a"
readelf -d "$prefix/bin/railcoll" | grep -q 'R.*PATH.*\[\$ORIGIN/\.\./lib' && ok "the command's RPATH is \$ORIGIN/../lib" \
  || bad "the command has no \$ORIGIN/../lib RPATH: $(readelf -d "$prefix/bin/railcoll" | grep -i path)"
algorithms=$("$prefix/bin/railcoll" algos --json | grep -o '"algorithm":' | wc -l)
[ "$algorithms" -gt 0 ] && ok "the installed command runs and lists $algorithms algorithms" || bad "the installed command fails"

# pkg-config: a program linked against a non-system prefix finds the library
# through LD_LIBRARY_PATH (or ld.so.conf; docs/extending.md, "Installing").
cc -o "$tmp/consumer_pc" "$SRC/tests/install/consumer.c" $(pkg-config --cflags --libs railcoll) 2>"$tmp/cc.log" \
  && ok "cc with pkg-config --cflags --libs railcoll" || bad "cc with pkg-config: $(head -3 "$tmp/cc.log")"
run "the pkg-config program runs" env LD_LIBRARY_PATH="$libdir" "$tmp/consumer_pc"
LD_LIBRARY_PATH=$libdir ldd "$tmp/consumer_pc" | grep -q "librailcoll.so.${version%%.*} => $libdir/" \
  && ok "it loads the installed librailcoll.so.${version%%.*}" || bad "it does not load $libdir/librailcoll.so"

# librailcoll.a on its own, with the libraries pkg-config --static names.
static_libs=$(pkg-config --static --libs-only-l railcoll | sed 's/-lrailcoll//')
cc -o "$tmp/consumer_a" "$SRC/tests/install/consumer.c" $(pkg-config --cflags railcoll) "$libdir/librailcoll.a" \
  $static_libs 2>"$tmp/cc.log" && ok "cc with librailcoll.a $static_libs" || bad "cc with librailcoll.a: $(head -3 "$tmp/cc.log")"
run "the static program runs" "$tmp/consumer_a"
ldd "$tmp/consumer_a" | grep -q railcoll && bad "the static program needs librailcoll.so" || ok "the static program needs no librailcoll.so"

# CMake: find_package(railcoll) and its imported targets.
generator=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
if cmake -S "$SRC/tests/install" -B "$tmp/cmake" -G "$generator" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/cmake.log" 2>&1 &&
   cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1; then
  ok "find_package(railcoll) and both imported targets build"
  run "railcoll::railcoll program runs (no LD_LIBRARY_PATH: CMake's RPATH)" "$tmp/cmake/consumer_shared"
  run "railcoll::railcoll_static program runs" "$tmp/cmake/consumer_static"
else
  bad "the CMake consumer: $(grep -iE 'error' -A3 "$tmp/cmake.log" | head -8)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
