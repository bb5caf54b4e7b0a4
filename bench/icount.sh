#!/bin/sh
# make bench-icount: instructions per operation of each bench row, counted by
# valgrind's callgrind (deterministic, needs no hardware counters). Each row
# is run twice (N and 2N iterations) and the difference is divided by N, so
# setup and the loop's start-up cost cancel out.
bench=${1:-build/bench}
out=${2:-build/icount}
mkdir -p "$out"
n=200000
count() { # row iterations -> instructions inside row_<row>
  valgrind --tool=callgrind --callgrind-out-file="$out/cg.out" --collect-atstart=no \
    --toggle-collect="row_$1" "$bench" --row "$1" "$2" >/dev/null 2>&1
  sed -n 's/^summary: //p;s/^totals: //p' "$out/cg.out" | head -n 1
}
printf '%-22s %12s\n' row "instr/op"
for row in $("$bench" --list); do
  a=$(count "$row" "$n"); b=$(count "$row" $((2 * n)))
  awk -v r="$row" -v a="$a" -v b="$b" -v n="$n" 'BEGIN { printf "%-22s %12.1f\n", r, (b - a) / n }'
done | tee "$out/icount.txt"
