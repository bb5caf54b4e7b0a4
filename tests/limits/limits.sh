#!/bin/sh
# Lists at each limit of Note [List limits] (dispatch.h) and one past it.
# At a limit: the probe (tests/limits/probe.c) compiles as C99 and checks
# every key of the list. Past it: the compile fails, under C99 and as C++,
# and its first error is the message that names the limit (no "size of
# array ... is negative").
#   usage: sh tests/limits/limits.sh CC CXX OUTDIR RESULTSDIR
CC=${1:-cc}; CXX=${2:-c++}; out=${3:-build/limits}; results=${4:-}
mkdir -p "$out"
ok=0; bad=0

# gen NAME B N P [PB]: B backends, N functionality rows, the first P per
# backend (PerBackend column PB, default 1); row 1 is the plain-kernel row,
# row 2 the autograd layer.
gen() {
  f="$out/$1.h"; b=$2; n=$3; p=$4; pb=${5:-1}
  { echo "#define DK_FORALL_BACKEND_COMPONENTS(X, extra) \\"
    i=1; while [ $i -le $b ]; do echo "    X(B$i, 1, Undefined, 0, extra) \\"; i=$((i+1)); done
    echo ""
    echo "#define DK_FORALL_FUNCTIONALITY_KEYS(X, extra) \\"
    j=1; while [ $j -le $n ]; do
      v=0; [ $j -le $p ] && v=$pb
      case $j in 1) roles="DK_R_BACKEND | DK_R_BACKEND_FN"; prefix="";; 2) roles=DK_R_AUTOGRAD; prefix=P$j;; *) roles=0; prefix=P$j;; esac
      [ $j = 1 ] && name=Plain || name=F$j
      echo "    X($name, $v, $prefix, $roles, extra) \\"; j=$((j+1)); done
    echo ""; } > "$f"
}
STRICT="-pedantic -Wall -Wextra -Werror -O0 -I. -I$out"
at_limit() {   # name B N P description
  gen "$1" "$2" "$3" "$4"
  if $CC -std=c99 $STRICT "-DDK_CONFIG_HEADER=\"$1.h\"" tests/limits/probe.c -o "$out/$1" -lpthread \
       > "$out/$1.log" 2>&1 && "$out/$1" > "$out/$1.out" 2>&1 && grep -q '^ok' "$out/$1.out"; then
    ok=$((ok+1)); echo "  ok    at the limit: $5 ($(cat "$out/$1.out"))"
  else
    bad=$((bad+1)); echo "  FAIL  at the limit: $5"; cat "$out/$1.log" "$out/$1.out" 2>/dev/null | head -20
  fi
}
past_limit() {   # name B N P PB message description
  gen "$1" "$2" "$3" "$4" "$5"
  for c in "$CC -std=c99" "$CXX -x c++"; do
    if $c $STRICT "-DDK_CONFIG_HEADER=\"$1.h\"" -fsyntax-only tests/limits/probe.c > "$out/$1.log" 2>&1; then
      bad=$((bad+1)); echo "  FAIL  one past the limit ($c): $7 compiled"
    elif grep -m1 'error' "$out/$1.log" | grep -q "$6" && ! grep -q 'size of array' "$out/$1.log"; then
      ok=$((ok+1)); echo "  ok    one past the limit ($c): $7: \"$(grep -o "$6[^\"]*" "$out/$1.log" | head -1)\""
    else
      bad=$((bad+1)); echo "  FAIL  one past the limit ($c): $7, without the message '$6':"; head -5 "$out/$1.log"
    fi
  done
}

at_limit   b16_f48   16 48 48 "16 backends, 48 functionality keys all per backend (64 keyset bits)"
at_limit   b1_f63    1  63 63 "1 backend, 63 functionality keys (64 keyset bits)"
at_limit   b16_f1    16 1  1  "16 backends, 1 functionality key"
past_limit b17       17 1  1  1 "limit: at most 16 backend components" "17 backends"
past_limit b0        0  1  1  1 "limit: at least 1 backend component" "no backend"
past_limit b16_f49   16 49 49 1 "limit: backend components + functionality keys <= 64" "16 backends + 49 functionality keys"
past_limit pb2       2  2  1  2 "limit: the PerBackend column" "a PerBackend column of 2"

[ -n "$results" ] && mkdir -p "$results" && echo "$ok $bad" > "$results/limits.count"
[ $bad = 0 ]
