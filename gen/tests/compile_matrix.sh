#!/bin/sh
# Compiles a dkgen header through gen/tests/driver.c with each compiler
# command given, prints one line per command and writes "<passed> <failed>"
# to COUNT_FILE.
#   sh gen/tests/compile_matrix.sh HEADER FORALL_MACRO OUT_DIR COUNT_FILE "cc -std=c99 ..." ...
header=$1; forall=$2; out=$3; count=$4; shift 4
mkdir -p "$out"
ok=0; bad=0
dir=$(dirname "$header"); base=$(basename "$header")
for c in "$@"; do
  if $c -I. -I"$dir" -DDRIVER_NO_IMPLEMENTATION "-DDKGEN_HEADER=\"$base\"" "-DDKGEN_FORALL=$forall" \
       -c gen/tests/driver.c -o "$out/matrix.o" > "$out/matrix.log" 2>&1; then
    ok=$((ok + 1)); echo "  ok    $base: $c"
  else
    bad=$((bad + 1)); echo "  FAIL  $base: $c"; head -30 "$out/matrix.log"
  fi
done
echo "$ok $bad" > "$count"
[ "$bad" = 0 ]
