#!/bin/sh
# bench/icount.sh BENCH [OUTDIR [ROWS]]: instructions per operation of each
# bench row, counted by valgrind's callgrind (deterministic, needs no hardware
# counters). Each row is run twice, N and 2N iterations (N from BENCH --list:
# 200,000 for a call, fewer for registrations), and the difference is divided
# by N, so set-up and the loop's start-up cost cancel out. A row's set-up
# (prepare_<row>) runs before callgrind's instrumentation starts when the
# bench supports it (BENCH --instr-atstart prints "no"). ROWS (an extended
# regular expression) keeps only the rows whose whole name it matches.
# Writes OUTDIR/icount.txt: "row instr/op".
#
# The rotate_* rows run with callgrind's cache model too (--cache-sim=yes: a
# first-level cache and a last-level one, sized as this machine's), and
# OUTDIR/cache.txt gets "row L1-misses/call LL-misses/call" (instruction
# and data misses, reads and writes), the same N / 2N difference.
bench=${1:-build/bench}
out=${2:-build/icount}
rows=${3:-.*}
mkdir -p "$out"
atstart=$("$bench" --instr-atstart 2>/dev/null) || atstart=yes
[ "$atstart" = no ] || atstart=yes
count() { # row iterations [cache] -> "instructions L1-misses LL-misses" inside row_<row>
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" --collect-atstart=no --instr-atstart="$atstart" \
    --cache-sim="${3:-no}" --toggle-collect="row_$1" "$bench" --row "$1" "$2" >/dev/null 2>&1 ||
    { echo "icount.sh: $bench --row $1 $2 failed" >&2; return 1; }
  awk '/^events:/ { for (i = 2; i <= NF; i++) ev[$i] = i - 1 }
       /^(summary|totals):/ && !done { done = 1
         printf "%s %s %s\n", $(ev["Ir"] + 1), $(ev["I1mr"] + 1) + $(ev["D1mr"] + 1) + $(ev["D1mw"] + 1),
                $(ev["ILmr"] + 1) + $(ev["DLmr"] + 1) + $(ev["DLmw"] + 1) }' "$out/cg.out"
}
"$bench" --list | grep -E "^($rows) " > "$out/rows.txt" || exit 1
: > "$out/cache.txt.tmp"
printf '%-22s %12s\n' row "instr/op"
while read -r row n; do
  cache=no
  case $row in rotate_*) cache=yes ;; esac
  a=$(count "$row" "$n" $cache) && b=$(count "$row" $((2 * n)) $cache) || continue
  set -- $a $b
  awk -v r="$row" -v a="$1" -v b="$4" -v n="$n" 'BEGIN { printf "%-22s %12.1f\n", r, (b - a) / n }'
  [ $cache = yes ] && awk -v r="$row" -v a1="$2" -v b1="$5" -v a2="$3" -v b2="$6" -v n="$n" \
    'BEGIN { printf "%-22s %8.2f %8.2f\n", r, (b1 - a1) / n, (b2 - a2) / n }' >> "$out/cache.txt.tmp"
done < "$out/rows.txt" | tee "$out/icount.txt.tmp"
mv -f "$out/icount.txt.tmp" "$out/icount.txt"
mv -f "$out/cache.txt.tmp" "$out/cache.txt"
rm -f "$out/cg.out" "$out/rows.txt"
