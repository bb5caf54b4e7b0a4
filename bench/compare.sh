#!/bin/sh
# bench/compare.sh OURS C10 [OUTDIR [ICOUNT_OURS ICOUNT_C10]]: dispatch.h's
# bench beside the real c10 dispatcher's (bench/bench_c10.cpp), joined on
# row id, as a Markdown table.
#
# OURS and C10 are the two bench binaries (default build/bench-1.13.1, the
# PyTorch 1.13.1 preset, and build/bench_c10), run here one after the other;
# either may instead be a saved output of one (a file that is not
# executable), to re-render without re-running. Instructions/op come from
# ICOUNT_OURS and ICOUNT_C10 (bench/icount.sh's icount.txt; default
# OUTDIR/icount-1.13.1/icount.txt and OUTDIR/icount-c10/icount.txt) when
# present, else from the bench's own instr column (hardware counters), else "-".
#
# Writes OUTDIR/bench.txt and OUTDIR/bench_c10.txt (the raw outputs),
# OUTDIR/compare.md (the table, also printed) and OUTDIR/compare.dat (ns/op
# rows for bench/chart.gp).
set -e
ours=${1:-build/bench-1.13.1}
c10=${2:-build/bench_c10}
out=${3:-build}
icount_ours=${4:-$out/icount-1.13.1/icount.txt}
icount_c10=${5:-$out/icount-c10/icount.txt}
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
# what a row measures, and whether it is exact or noisy
function unit(id) {
  if (id ~ /^memory_/) return "bytes, exact"
  if (id ~ /^scale_rss_/) return "bytes of peak RSS/op"
  if (id ~ /^scale_time_/) return "ns/op, noisy"
  if (id == "two_threads") return "x, noisy"
  if (id ~ /^(teardown|destroy)_/) return "ns/handle, noisy"
  return "ns, noisy"
}
function ratio(a, b) { return (a == "" || b == "" || b + 0 == 0) ? "-" : sprintf("%.1fx", a / b) }
function line(id, what, a, b, ia, ib, u) {
  # c10 / dispatch.h: of the instructions where both are counted (exact), else of the values
  r = (ia != "" && ib != "") ? ratio(ib, ia) : (u ~ /^x/ ? "-" : ratio(b, a))
  printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", id, what, u, num(a), num(b), ins(ia), ins(ib), r
}
function diff(sys, x, y, arr) { return ((sys, x) in arr && (sys, y) in arr) ? arr[sys, x] - arr[sys, y] : "" }
function idiff(sys, x, y) { return (instr(sys, x) != "" && instr(sys, y) != "") ? instr(sys, x) - instr(sys, y) : "" }
function derived(id, what, x, y) {
  line(id, what, diff("o", x, y, ns), diff("c", x, y, ns), idiff("o", x, y), idiff("c", x, y), "ns, noisy")
}
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

  print "| row | what | unit | dispatch.h | c10 | dispatch.h instr | c10 instr | c10 / dispatch.h |"
  print "|---|---|---|---:|---:|---:|---:|---:|"
  for (i = 1; i <= n; i++) {
    id = rows[i]
    what = (("o", id) in desc) ? desc["o", id] : desc["c", id]
    a = (("o", id) in ns) ? ns["o", id] : ""
    b = (("c", id) in ns) ? ns["c", id] : ""
    line(id, what, a, b, instr("o", id), instr("c", id), unit(id))
    # chart data: ns per operation present on both sides
    if (a != "" && b != "" && unit(id) ~ /^ns/) printf "\"%s\" %s %s\n", id, a, b > datfile
  }
  derived("one-hop overhead, loop", "call_one_hop - fnptr_call", "call_one_hop", "fnptr_call")
  derived("one-hop overhead, call site", "site_one_hop - site_fnptr", "site_one_hop", "site_fnptr")
  derived("one-hop overhead, autograd keys", "call_fallthrough - fnptr_call", "call_fallthrough", "fnptr_call")
  derived("two-hop overhead", "call_two_hops - fnptr_call", "call_two_hops", "fnptr_call")
  derived("keyset -> slot over the loop", "table_index - loop_baseline", "table_index", "loop_baseline")
  # the boxed path against c10 (issue #34: at least 5x): both ratios side
  # by side, the instruction ratio (exact) deciding, the time ratio (noisy) beside
  nb = 0
  for (i = 1; i <= 2; i++) {
    id = i == 1 ? "boxed_call" : "boxed_fallback"
    if (!(("o", id) in ns) || !(("c", id) in ns)) continue
    if (!nb++) {
      print ""
      print "the boxed path against c10 (target: c10 / dispatch.h at least 5x; instructions decide, exact; the time ratio beside, noisy):"
      print ""
      print "| row | dispatch.h instr | c10 instr | c10 / dispatch.h, instr | c10 / dispatch.h, time | 5x |"
      print "|---|---:|---:|---:|---:|---|"
    }
    ia = instr("o", id); ib = instr("c", id)
    met = (ia != "" && ib != "" && ia + 0 > 0) ? (ib / ia >= 5 ? "met" : "not met") : "not counted"
    printf "| %s | %s | %s | %s | %s | %s |\n", id, ins(ia), ins(ib), ratio(ib, ia), ratio(ns["c", id], ns["o", id]), met
  }
  print ""
  print "c10 side of each row (bench/bench_c10.cpp), where it differs:"
  print ""
  for (i = 1; i <= n; i++) {
    id = rows[i]
    if ((("c", id) in desc) && desc["c", id] != desc["o", id]) printf "- %s: %s\n", id, desc["c", id]
  }
  print ""
  print "dispatch.h and c10: medians of the run (ns: noisy, on a shared machine; bytes: exact);"
  print "instr: instructions/op under callgrind (bench/icount.sh), exact and repeatable, \"-\" where not counted;"
  print "c10 / dispatch.h: of the instructions where both are counted, else of the medians."
}' "$out/bench.txt" "$out/bench_c10.txt" "$icount_ours" "$icount_c10" > "$out/compare.md.tmp" 2>&1 || {
  cat "$out/compare.md.tmp" >&2; exit 1; }
mv -f "$out/compare.md.tmp" "$out/compare.md"
cat "$out/compare.md"
