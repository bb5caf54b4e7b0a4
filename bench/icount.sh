#!/bin/sh
# bench/icount.sh BENCH [OUTDIR]: instructions per operation of each bench
# row, counted by valgrind's callgrind (deterministic, needs no hardware
# counters). Each row is run twice, N and 2N iterations (N from BENCH --list:
# 200,000 for a call, fewer for registrations), and the difference is divided
# by N, so set-up and the loop's start-up cost cancel out. A row's set-up
# (prepare_<row>) runs before callgrind's instrumentation starts when the
# bench supports it (BENCH --instr-atstart prints "no"). Writes
# OUTDIR/icount.txt: "row instr/op".
bench=${1:-build/bench}
out=${2:-build/icount}
mkdir -p "$out"
atstart=$("$bench" --instr-atstart 2>/dev/null) || atstart=yes
[ "$atstart" = no ] || atstart=yes
count() { # row iterations -> instructions inside row_<row>
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" --collect-atstart=no --instr-atstart="$atstart" \
    --toggle-collect="row_$1" "$bench" --row "$1" "$2" >/dev/null 2>&1 || { echo "icount.sh: $bench --row $1 $2 failed" >&2; return 1; }
  sed -n 's/^summary: //p;s/^totals: //p' "$out/cg.out" | head -n 1
}
"$bench" --list > "$out/rows.txt" || exit 1
printf '%-22s %12s\n' row "instr/op"
while read -r row n; do
  a=$(count "$row" "$n") && b=$(count "$row" $((2 * n))) || continue
  awk -v r="$row" -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%-22s %12.1f\n", r, (b - a) / n }'
done < "$out/rows.txt" | tee "$out/icount.txt.tmp"
mv -f "$out/icount.txt.tmp" "$out/icount.txt"
rm -f "$out/cg.out" "$out/rows.txt"
