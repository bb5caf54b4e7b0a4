#!/bin/sh
# bench/compare.sh OURS C10 [OUTDIR]: dispatch.h's bench beside the real c10
# dispatcher's (bench/bench_c10.cpp), joined on row id, as a Markdown table.
#
# OURS and C10 are the two bench binaries (default build/bench and
# build/bench_c10), run here one after the other; either may instead be a
# saved output of one (a file that is not executable), to re-render without
# re-running. Instructions/op come from OUTDIR/icount/icount.txt and
# OUTDIR/icount-c10/icount.txt (bench/icount.sh) when present, else from the
# bench's own instr column (hardware counters), else "-".
#
# Writes OUTDIR/bench.txt and OUTDIR/bench_c10.txt (the raw outputs),
# OUTDIR/compare.md (the table, also printed) and OUTDIR/compare.dat (ns/op
# rows for bench/chart.gp).
set -e
ours=${1:-build/bench}
c10=${2:-build/bench_c10}
out=${3:-build}
mkdir -p "$out"

capture() { # bench-or-saved-output destination
  if [ -x "$1" ] && [ ! -d "$1" ]; then
    echo "running $1 ..." >&2
    "$1" > "$2.tmp"; mv -f "$2.tmp" "$2"
  elif [ -f "$1" ]; then
    [ "$1" -ef "$2" ] || cp -f "$1" "$2"
  else
    echo "compare.sh: $1: no such bench binary or saved output" >&2; exit 1
  fi
}
capture "$ours" "$out/bench.txt"
capture "$c10" "$out/bench_c10.txt"

icount_ours="$out/icount/icount.txt"
icount_c10="$out/icount-c10/icount.txt"
[ -f "$icount_ours" ] || icount_ours=/dev/null
[ -f "$icount_c10" ] || icount_c10=/dev/null
: > "$out/compare.dat"

awk -v datfile="$out/compare.dat" '
# a bench row: id, what, median, min-max, instr, compare-with (what and
# compare-with may hold spaces: find the numeric middle with a regex)
function parse_row(line, sys,    id, rest, pos, m, f) {
  id = line; sub(/ .*/, "", id)
  rest = substr(line, length(id) + 1)
  pos = match(rest, / +[-0-9.e+]+ +[-0-9.e+]+-[-0-9.e+]+ +([0-9.]+|n\/a)/)
  if (!pos) return
  what = substr(rest, 1, pos - 1); gsub(/^ +| +$/, "", what)
  m = substr(rest, pos, RLENGTH); gsub(/^ +/, "", m)
  split(m, f, / +/)
  if (!((sys, id) in ns)) { order[sys, ++count[sys]] = id }
  ns[sys, id] = f[1]; desc[sys, id] = what
  if (f[3] != "n/a") hw[sys, id] = f[3]
}
function num(v) { return v == "" ? "-" : (v + 0 >= 1000 ? sprintf("%.0f", v) : sprintf("%.2f", v)) }
function ins(v) { return v == "" ? "-" : sprintf("%.1f", v) }
function instr(sys, id) {
  if ((sys, id) in ic) return ic[sys, id]
  if ((sys, id) in hw) return hw[sys, id]
  return ""
}
function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.1fx", a / b) }
function line(id, what, a, b, ia, ib) {
  printf "| %s | %s | %s | %s | %s | %s | %s |\n", id, what, num(a), num(b), ratio(b, a), ins(ia), ins(ib)
}
function diff(sys, x, y, arr) { return ((sys, x) in arr && (sys, y) in arr) ? arr[sys, x] - arr[sys, y] : "" }
function idiff(sys, x, y) { return (instr(sys, x) != "" && instr(sys, y) != "") ? instr(sys, x) - instr(sys, y) : "" }
FILENAME == ARGV[1] { parse_row($0, "o"); next }
FILENAME == ARGV[2] { parse_row($0, "c"); next }
FILENAME == ARGV[3] && $1 != "row" { ic["o", $1] = $2; next }
FILENAME == ARGV[4] && $1 != "row" { ic["c", $1] = $2; next }
END {
  # row order: ours, with c10-only rows placed after their c10 predecessor
  n = 0
  for (i = 1; i <= count["o"]; i++) {
    id = order["o", i]; rows[++n] = id; seen[id] = 1
    for (j = 1; j <= count["c"]; j++) if (order["c", j] == id) break
    for (j++; j <= count["c"] && !(("o", order["c", j]) in ns); j++) { rows[++n] = order["c", j]; seen[order["c", j]] = 1 }
  }
  for (j = 1; j <= count["c"]; j++) if (!(order["c", j] in seen)) rows[++n] = order["c", j]

  print "| row | what | dispatch.h ns | c10 ns | c10/dispatch.h | dispatch.h instr | c10 instr |"
  print "|---|---|---:|---:|---:|---:|---:|"
  for (i = 1; i <= n; i++) {
    id = rows[i]
    what = (("o", id) in desc) ? desc["o", id] : desc["c", id]
    a = (("o", id) in ns) ? ns["o", id] : ""
    b = (("c", id) in ns) ? ns["c", id] : ""
    line(id, what, a, b, instr("o", id), instr("c", id))
    # chart data: per-operation times present on both sides
    if (a != "" && b != "" && id !~ /^(memory_|two_threads|teardown)/) {
      printf "\"%s\" %s %s\n", id, a, b > datfile
    }
  }
  line("one-hop overhead", "call_fallthrough - fnptr_call: one-hop overhead over own fn-pointer baseline",
       diff("o", "call_fallthrough", "fnptr_call", ns), diff("c", "call_fallthrough", "fnptr_call", ns),
       idiff("o", "call_fallthrough", "fnptr_call"), idiff("c", "call_fallthrough", "fnptr_call"))
  line("two-hop overhead", "call_two_hops - fnptr_call: two-hop overhead over own fn-pointer baseline",
       diff("o", "call_two_hops", "fnptr_call", ns), diff("c", "call_two_hops", "fnptr_call", ns),
       idiff("o", "call_two_hops", "fnptr_call"), idiff("c", "call_two_hops", "fnptr_call"))
  print ""
  print "c10 side of each row (bench/bench_c10.cpp), where it differs:"
  print ""
  for (i = 1; i <= n; i++) {
    id = rows[i]
    if ((("c", id) in desc) && desc["c", id] != desc["o", id]) printf "- %s: %s\n", id, desc["c", id]
  }
  print ""
  print "ns: median ns/op (bytes for memory_*, total ns for teardown_1000x4, x for two_threads);"
  print "instr: instructions/op under callgrind (bench/icount.sh), \"-\" where not counted."
}' "$out/bench.txt" "$out/bench_c10.txt" "$icount_ours" "$icount_c10" > "$out/compare.md.tmp" 2>&1 || {
  cat "$out/compare.md.tmp" >&2; exit 1; }
mv -f "$out/compare.md.tmp" "$out/compare.md"
cat "$out/compare.md"
