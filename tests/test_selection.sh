#!/usr/bin/env bash
# Selection from the command line and a program (docs/selection.md): the rules
# in force and where they came from, the defaults table of the docs matching
# the code, tuning files made by `railcoll sim tune` and `railcoll tune` that
# load and take effect, and bad variables or files refused with one line that
# names them: by the command (exit 2) and by railcoll_comm_init (ERR_ARG).
set -u
RC=${1:?path to railcoll}
EXAMPLE=${2:?path to allgather_example}
DOCS=${3:?path to docs/selection.md}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
# Nothing from the caller's environment may change the rules tested here.
for v in $(env | sed -n 's/^\(RAILCOLL_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

# expect_refused "text" command...: exit 2, nothing on stdout, one line on stderr with the text.
expect_refused() {
  local want=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"; local st=$?
  if [ $st -ne 2 ] || [ -s "$tmp/out" ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF -- "$want" "$tmp/err"; then
    bad "$*: exit $st, stderr '$(head -c 300 "$tmp/err")', wanted '$want'"
  else
    ok "refused: $want"
  fi
}

# The defaults, in order, each with its origin.
n=$("$RC" algos --rules | grep -c ' default#[0-9]')
[ "$n" -eq 54 ] && ok "algos --rules lists the 54 default rules" || bad "algos --rules lists $n default rules"
"$RC" algos --rules | grep -qE '^allgather +node_bytes <= 2K +smp_gather_bcast +default#1 ' && ok "a default rule reads as written" \
  || bad "algos --rules: $("$RC" algos --rules | sed -n 4p)"

# docs/selection.md shows the defaults table the code has.
sed -n '/<!-- defaults: railcoll algos --rules --markdown -->/,/<!-- end of defaults -->/p' "$DOCS" | sed '1d;$d' >"$tmp/doc"
"$RC" algos --rules --markdown >"$tmp/code"
diff "$tmp/doc" "$tmp/code" >"$tmp/diff" && ok "docs/selection.md's defaults table matches the code" \
  || bad "docs/selection.md's defaults table differs from railcoll algos --rules --markdown: $(head -6 "$tmp/diff")"

# sim tune: a small topology of the testbed; the file loads and takes effect.
if "$RC" sim tune --preset testbed --ranks 8 --ppn 4 --rails 2 -m 8:4K -o "$tmp/sim.json" >"$tmp/log" 2>&1; then
  ok "sim tune --preset testbed --ranks 8 --ppn 4"
else
  bad "sim tune: $(tail -3 "$tmp/log")"
fi
for c in allgather barrier bcast gather allreduce; do
  grep -q "\"collective\":\"$c\"" "$tmp/sim.json" || bad "the sim tune file has no $c rule"
done
RAILCOLL_TUNING=$tmp/sim.json "$RC" algos --rules >"$tmp/rules" 2>&1 && grep -q "file:$tmp/sim.json#0" "$tmp/rules" \
  && ok "RAILCOLL_TUNING: its rules are in force, before the defaults" || bad "the sim tune file: $(head -3 "$tmp/rules")"
RAILCOLL_TUNING=$tmp/sim.json "$RC" show allgather --algo auto --ranks 8 --ppn 4 --rails 2 --bytes 64 | head -1 \
  | grep -qE "^auto: [a-z_]+ \(file:$tmp/sim.json#[0-9]+\)$" && ok "show --algo auto takes the file's rule" \
  || bad "show --algo auto: $(RAILCOLL_TUNING=$tmp/sim.json "$RC" show allgather --algo auto --ranks 8 --ppn 4 --rails 2 --bytes 64 2>&1 | head -1)"
RAILCOLL_TUNING=$tmp/sim.json RAILCOLL_ALLGATHER_ALGO=ring "$RC" show allgather --algo auto --ranks 8 --ppn 4 --rails 2 \
  --bytes 64 | head -1 | grep -qx "auto: ring (RAILCOLL_ALLGATHER_ALGO)" && ok "the variable comes before the file" \
  || bad "RAILCOLL_ALLGATHER_ALGO did not win over the file"
"$RC" show allgather --algo auto --ranks 8 --ppn 4 --rails 2 --bytes 64 | head -1 | grep -qx "auto: smp_gather_bcast (default#1)" \
  && ok "without the file, the defaults" || bad "show --algo auto without a file"

# tune: real processes here (a few iterations); the file loads.
if "$RC" tune --local -n 4 --ppn 2 --rails 2 --collectives barrier,allgather -m 8:64 -i 5 -x 1 -o "$tmp/bench.json" \
     >"$tmp/log" 2>&1 && RAILCOLL_TUNING=$tmp/bench.json "$RC" algos --rules >"$tmp/rules" 2>&1; then
  ok "tune --local writes a file that loads"
else
  bad "tune --local: $(tail -5 "$tmp/log") $(head -2 "$tmp/rules")"
fi
for c in allgather barrier; do
  grep -qE "^$c +ranks 4, nodes 2, ppn 2, rails 2, .*file:$tmp/bench.json#" "$tmp/rules" || bad "tune: no $c rule for 4 ranks in the file"
done

# A program (the C API): the file's rule, unless the variable says otherwise.
printf '{"rules": [{"collective": "allgather", "ranks": 1, "algorithm": "ring"}]}\n' >"$tmp/one.json"
RAILCOLL_TUNING=$tmp/one.json RAILCOLL_SIZE=1 RAILCOLL_RANK=0 timeout 60 "$EXAMPLE" 2>&1 | grep -q "algorithm ring)" \
  && ok "a program runs the tuning file's algorithm" || bad "a program ignores RAILCOLL_TUNING"
RAILCOLL_TUNING=$tmp/one.json RAILCOLL_ALLGATHER_ALGO=bruck RAILCOLL_SIZE=1 RAILCOLL_RANK=0 timeout 60 "$EXAMPLE" 2>&1 \
  | grep -q "algorithm bruck)" && ok "a program: the variable before the file" || bad "a program: the file won over the variable"

# Refused: by the command, and by a program's railcoll_comm_init.
printf '{"rules": [{"collective": "bcast", "algorithm": "smp", "bytes": [0, 100]},\n {"collective": "bcast", "algorithm": "binomial"}]}\n' >"$tmp/overlap.json"
printf '{"rules": [{"collective": "gather", "algorithm": "ring"}]}\n' >"$tmp/unknown.json"
expect_refused "rules #0 and #1 overlap" env RAILCOLL_TUNING="$tmp/overlap.json" "$RC" algos --rules
expect_refused "RAILCOLL_TUNING: $tmp/unknown.json: rule #0: unknown gather algorithm 'ring'" \
  env RAILCOLL_TUNING="$tmp/unknown.json" "$RC" show gather --algo auto --ranks 4
expect_refused "RAILCOLL_ALLGATHERV_ALGO: there is no collective 'allgatherv'" env RAILCOLL_ALLGATHERV_ALGO=ring "$RC" algos --rules
expect_refused "unknown bcast algorithm 'nope' (from RAILCOLL_BCAST_ALGO" env RAILCOLL_BCAST_ALGO=nope "$RC" algos --rules
for bad_env in "RAILCOLL_ALLGATHERV_ALGO=ring:there is no collective 'allgatherv'" \
               "RAILCOLL_GATHER_ALGO=bogus:unknown gather algorithm 'bogus' (from RAILCOLL_GATHER_ALGO" \
               "RAILCOLL_TUNING=$tmp/unknown.json:RAILCOLL_TUNING: $tmp/unknown.json: rule #0"; do
  setting=${bad_env%%:*} want=${bad_env#*:}
  env "$setting" RAILCOLL_SIZE=1 RAILCOLL_RANK=0 timeout 60 "$EXAMPLE" >"$tmp/out" 2>&1; st=$?
  if [ $st -ne 0 ] && grep -qF "railcoll_comm_init: invalid argument: " "$tmp/out" && grep -qF -- "$want" "$tmp/out"; then
    ok "railcoll_comm_init refuses $setting"
  else
    bad "railcoll_comm_init with $setting: exit $st: $(head -c 300 "$tmp/out")"
  fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
