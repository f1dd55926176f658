#!/usr/bin/env bash
# The settings table from the command line (docs/settings.md): the docs' table
# is the code's, `railcoll info --settings` shows each value with where it came
# from, and a wrong value is said with its name (exit 1).
set -u
RC=${1:?path to railcoll}
DOCS=${2:?path to docs/settings.md}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
for v in $(env | sed -n 's/^\(RAILCOLL_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

sed -n '/<!-- settings: railcoll info --settings --markdown -->/,/<!-- end of settings -->/p' "$DOCS" | sed '1d;$d' >"$tmp/doc"
"$RC" info --settings --markdown >"$tmp/code"
if [ -s "$tmp/doc" ] && diff "$tmp/doc" "$tmp/code" >"$tmp/diff"; then
  ok "docs/settings.md's table matches railcoll info --settings --markdown"
else
  bad "docs/settings.md's table differs from railcoll info --settings --markdown (paste it in): $(head -6 "$tmp/diff")"
fi

if RAILCOLL_TIMEOUT=5 RAILCOLL_JOB_KEY=hush "$RC" info --settings >"$tmp/out" 2>&1; then
  grep -q '^RAILCOLL_TIMEOUT  5  environment  runtime/comm  ' "$tmp/out" && ok "a value from the environment says so" \
    || bad "RAILCOLL_TIMEOUT=5: $(grep TIMEOUT "$tmp/out" | head -2)"
  grep -q '^RAILCOLL_SHM_MIB  256  default  ' "$tmp/out" && ok "a default says so" \
    || bad "RAILCOLL_SHM_MIB: $(grep SHM_MIB "$tmp/out")"
  ! grep -q hush "$tmp/out" && grep -q '^RAILCOLL_JOB_KEY  (set)  environment' "$tmp/out" && ok "the job key is not shown" \
    || bad "the job key: $(grep JOB_KEY "$tmp/out")"
else
  bad "railcoll info --settings failed: $(tail -3 "$tmp/out")"
fi

RAILCOLL_SPIN_US=soon "$RC" info --settings >"$tmp/out" 2>&1
st=$?
[ $st -eq 1 ] && grep -q "wrong: RAILCOLL_SPIN_US='soon' is not a valid number" "$tmp/out" && ok "a wrong value: exit 1, named" \
  || bad "RAILCOLL_SPIN_US=soon: exit $st, $(tail -2 "$tmp/out")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
