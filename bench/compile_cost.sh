#!/bin/sh
# bench/compile_cost.sh OUTDIR: what dispatch.h costs to build, each beside a
# control compiled in the same run, interleaved with it:
# - the unit that defines DISPATCH_IMPLEMENTATION at -O2 with gcc (-c),
#   beside stb_image.h's implementation unit (STB_IMAGE_IMPLEMENTATION;
#   Debian's libstb-dev, which make deps installs): the median of
#   COMPILE_RUNS (default 5) compiles of each; target at most 1.25x;
# - a unit that includes the header only (no implementation), beside a unit
#   that includes <stdio.h> only: the median of 15 compiles (-fsyntax-only)
#   of each with gcc and clang as C and g++ as C++; targets at most 1.6x as
#   C, 2.5x as C++, at most 150 KB preprocessed; with valgrind, the same
#   targets in gcc's and g++'s instructions (below), the steady verdict.
# A compile's time is the CPU time (user + sys)
# of the compiler's processes, read by bash's `time`: on a shared machine the
# load of other processes stretches wall time, most for the shortest compile,
# which made the ratio move by half of itself from one run to the next.
out=${1:-build/compile-cost}
mkdir -p "$out"
printf '#include <stdio.h>\nint main(void) { return 0; }\n' > "$out/stdio.c"
printf '#include "dispatch.h"\n#include <stdio.h>\nint main(void) { return 0; }\n' > "$out/dispatch.c"
times_ms() { # compiler flags -> "stdio_ms dispatch_ms": CPU medians of 15 runs each, interleaved
  # shellcheck disable=SC2016
  bash -c 'TIMEFORMAT="%3U %3S"; i=0; while [ $i -lt 15 ]; do
             for f in "$3" "$4"; do { time $1 $2 -I. -fsyntax-only "$f" 2>/dev/null; } 2>&1; done
             i=$((i + 1)); done' sh "$1" "$2" "$out/stdio.c" "$out/dispatch.c" |
    awk '{ t = ($1 + $2) * 1000; if (NR % 2) s[++n] = t; else d[n] = t }
         function median(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
                                          return a[int((n + 1) / 2)] }
         END { printf "%.1f %.1f", median(s, n), median(d, n) }'
}
# The implementation's unit beside stb_image.h's, both at -O2 (-c: the whole
# compile, code generation included): the median CPU time of COMPILE_RUNS
# compiles of each, interleaved.
stb=$(printf '#include <stb/stb_image.h>\n' | ${CC:-cc} -E -x c - 2>/dev/null | sed -n 's/^# [0-9]* "\(.*stb_image\.h\)".*/\1/p' | head -n 1)
if [ -n "$stb" ]; then
  printf '#define STB_IMAGE_IMPLEMENTATION\n#include <stb/stb_image.h>\n' > "$out/stb_image.c"
  printf '#define DISPATCH_IMPLEMENTATION\n#include "dispatch.h"\n' > "$out/dispatch_impl.c"
  # shellcheck disable=SC2016
  t=$(bash -c 'TIMEFORMAT="%3U %3S"; i=0; while [ $i -lt "$3" ]; do
             for f in "$4" "$5"; do { time $1 -std=c99 -O2 -I. -c "$f" -o "$2/unit.o" 2>/dev/null; } 2>&1; done
             i=$((i + 1)); done' sh "${CC:-cc}" "$out" "${COMPILE_RUNS:-5}" "$out/stb_image.c" "$out/dispatch_impl.c" |
    awk '{ t = ($1 + $2) * 1000; if (NR % 2) s[++n] = t; else d[n] = t }
         function median(a, n,   i, j, x) { for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
                                          return a[int((n + 1) / 2)] }
         END { printf "%.0f %.0f", median(s, n), median(d, n) }')
  rm -f "$out/unit.o"
  awk -v c="${CC:-cc} -O2" -v s="${t% *}" -v d="${t#* }" -v l=1.25 -v k="${COMPILE_RUNS:-5}" \
    'BEGIN { r = d / s; printf "%-28s %14s %16s %8s %8s\n", "implementation unit", "stb_image.h ms", "dispatch.h ms", "ratio", "limit"
             printf "%-28s %14s %16s %7.2fx %7sx  %s (median of %d, interleaved)\n", c, s, d, r, l, r <= l ? "met" : "not met", k }'
else
  echo "implementation unit beside stb_image.h: not measured (stb/stb_image.h not found: make deps installs libstb-dev)"
fi
echo
printf '%-28s %12s %12s %8s %8s  %s\n' "include only" "stdio.h ms" "dispatch.h ms" ratio limit ""
for c in "${CC:-cc}:-std=c99:1.6" "${CLANG:-clang}:-std=c99:1.6" "${CXX:-g++}:-x c++:2.5"; do
  cc=${c%%:*}; rest=${c#*:}; flags=${rest%:*}; limit=${rest##*:}
  command -v "$cc" >/dev/null 2>&1 || continue
  t=$(times_ms "$cc" "$flags"); s=${t% *}; d=${t#* }
  awk -v c="$cc $flags" -v s="$s" -v d="$d" -v l="$limit" \
    'BEGIN { r = d / s; printf "%-28s %12s %12s %7.2fx %7sx  %s\n", c, s, d, r, l, r <= l ? "met" : "not met" }'
done
# The steady verdict: the instructions of the compiler proper (gcc's cc1,
# g++'s cc1plus: the command line the driver runs, from -###) on both units
# under callgrind, when valgrind is present (COMPILE_ICOUNT=0: not counted).
# No load of the machine moves them, where the times above (1 ms steps on
# compiles of 10 to 30 ms) move by a tenth from one run to the next. Time
# is about a fixed start plus a cost per instruction, the start the same for
# both units, so the ratio of instructions is above the ratio of times; the
# limits here are the time limits through that line, fitted on the runs
# docs/bench.md records (a time ratio is about 1 + 0.4 (instruction ratio
# - 1) for cc1, 1 + 0.45 (... - 1) for cc1plus): 1.6x in time is 2.5x in
# cc1's instructions (<stdio.h> alone about 27 M), 2.5x is 4.3x in
# cc1plus's (<stdio.h> about 35 M).
icount() { # compiler flags file -> instructions of its compiler proper on file
  # shellcheck disable=SC2086
  line=$($1 -### $2 -I. -fsyntax-only "$3" 2>&1 | grep -E '/cc1(plus)? ' | head -n 1)
  [ -n "$line" ] || return 1
  eval "valgrind --tool=callgrind --callgrind-out-file=/dev/null $line" 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
if [ "${COMPILE_ICOUNT:-1}" != 0 ] && command -v valgrind >/dev/null 2>&1; then
  echo
  printf '%-28s %12s %12s %8s %8s  %s\n' "include only, instructions" "stdio.h M" "dispatch.h M" ratio limit ""
  for c in "${CC:-cc}:-std=c99:cc1:2.5" "${CXX:-g++}:-x c++:cc1plus:4.3"; do
    cc=${c%%:*}; rest=${c#*:}; flags=${rest%%:*}; rest=${rest#*:}; proper=${rest%%:*}; limit=${rest#*:}
    command -v "$cc" >/dev/null 2>&1 || continue
    if ! s=$(icount "$cc" "$flags" "$out/stdio.c") || ! d=$(icount "$cc" "$flags" "$out/dispatch.c") ||
       [ -z "$s" ] || [ -z "$d" ]; then
      echo "$cc $flags: $proper not counted (its command line not found)"; continue
    fi
    awk -v c="$cc $flags ($proper)" -v s="$s" -v d="$d" -v l="$limit" \
      'BEGIN { r = d / s; printf "%-28s %12.1f %12.1f %7.2fx %7sx  %s (callgrind, exact)\n", c, s / 1e6, d / 1e6, r, l, r <= l ? "met" : "not met" }'
  done
fi
kb=$(${CC:-cc} -std=c99 -I. -E -P "$out/dispatch.c" | wc -c | awk '{ printf "%d", $1 / 1024 }')
printf 'preprocessed unit (dispatch.h + stdio.h): %s KB, limit 150 KB: %s\n' "$kb" "$([ "$kb" -le 150 ] && echo met || echo not met)"
