#!/bin/sh
# bench/report.sh BUILD SOURCE: gathers what one run of `make bench-full` or
# `make bench-c10` (SOURCE) measured into BUILD/bench-report/, which
# `make bench-readme` turns into docs/bench.md's tables: every table
# there comes from this one run.
#
#   BUILD/bench.txt, BUILD/bench_c10.txt  the timed runs (bench-c10: the
#        1.13.1 preset beside c10; bench: the default preset, no c10 side)
#   BUILD/icount*/icount.txt, cache.txt   callgrind's counts of this run
#        (icount-epochs: the call rows of the -DDK_CALL_EPOCHS build)
#   BUILD/shape/shape.md                  the call-path targets in several units
# Writes bench-report/{source,table.md,targets.md,targets-2.7.1.md,
# targets-1.13.1.md,cache.md,shape.md} and prints the targets.
build=${1:-build}
source=${2:-make bench-full}
r=$build/bench-report
rm -rf "$r.tmp"
mkdir -p "$r.tmp"
echo "$source" > "$r.tmp/source"
ic() { [ -f "$build/$1/icount.txt" ] && echo "$build/$1/icount.txt" || echo /dev/null; }
if [ "$source" = "make bench-c10" ]; then
  cp "$build/compare.md" "$r.tmp/table.md"
  sh bench/targets.sh -m -n "$build/bench.txt" -i "$(ic icount-1.13.1)" > "$r.tmp/targets.md"
  preset="PyTorch 1.13.1 preset"
else
  sh bench/compare.sh "$build/bench.txt" "$build/bench_c10-none.txt" "$build/report-compare" "$(ic icount)" /dev/null \
    > /dev/null
  # no c10 side: its columns and notes left out
  awk -F'|' '/^\|/ { printf "|%s|%s|%s|%s|%s|\n", $2, $3, $4, $5, $7; next }
             /^c10 side of each row/ { skip = 1; next } /^dispatch.h and c10:/ { skip = 0 }
             !skip' "$build/report-compare/compare.md" |
    sed 's/^dispatch.h and c10: medians/dispatch.h: medians/; /^c10 \/ dispatch.h:/d' > "$r.tmp/table.md"
  sh bench/targets.sh -m -n "$build/bench.txt" -i "$(ic icount)" -e "$(ic icount-epochs)" > "$r.tmp/targets.md"
  preset="PyTorch 2.7.1 preset"
fi
sh bench/targets.sh -m -k instr -i "$(ic icount)" -e "$(ic icount-epochs)" > "$r.tmp/targets-2.7.1.md"
sh bench/targets.sh -m -k instr -i "$(ic icount-1.13.1)" > "$r.tmp/targets-1.13.1.md"
{
  echo "| row | dispatch.h L1 misses/call | dispatch.h LL misses/call | c10 L1 misses/call | c10 LL misses/call |"
  echo "|---|---:|---:|---:|---:|"
  ours=$build/icount/cache.txt
  [ "$source" = "make bench-c10" ] && ours=$build/icount-1.13.1/cache.txt
  theirs=$build/icount-c10/cache.txt
  [ "$source" = "make bench-c10" ] && [ -f "$theirs" ] || theirs=/dev/null
  [ -f "$ours" ] || ours=/dev/null
  awk 'FILENAME == ARGV[1] { o[$1] = $2 " | " $3; order[++n] = $1; next } { c[$1] = $2 " | " $3 }
       END { for (i = 1; i <= n; i++) printf "| %s | %s | %s |\n", order[i], o[order[i]], (order[i] in c) ? c[order[i]] : "- | -" }' \
    "$ours" "$theirs"
} > "$r.tmp/cache.md"
if [ -f "$build/shape/shape.md" ]; then cp "$build/shape/shape.md" "$r.tmp/shape.md"; fi
rm -rf "$r"
mv "$r.tmp" "$r"
echo "targets, $preset (this run: instructions exact under callgrind; ns and ratios noisy; bytes exact):"
echo
if [ "$source" = "make bench-c10" ]; then sh bench/targets.sh -n "$build/bench.txt" -i "$(ic icount-1.13.1)"
else sh bench/targets.sh -n "$build/bench.txt" -i "$(ic icount)" -e "$(ic icount-epochs)"; fi
echo
echo "instruction targets, PyTorch 2.7.1 preset (callgrind, this run):"
sh bench/targets.sh -k instr -i "$(ic icount)" -e "$(ic icount-epochs)"
echo
echo "instruction targets, PyTorch 1.13.1 preset (callgrind, this run):"
sh bench/targets.sh -k instr -i "$(ic icount-1.13.1)"
if [ -f "$r/shape.md" ]; then echo; echo "call-path targets in several units (callgrind):"; cat "$r/shape.md"; fi
echo; echo "rotate rows under callgrind's cache model:"; cat "$r/cache.md"
