#!/bin/sh
# dkgen's behaviour as a command: errors name their lines and every line is
# checked, no header is written on an error, lines of any length, '#'
# comments, operators whose C names clash. Prints one line per check and
# writes "<passed> <failed>" to $out/check.count.
#   sh gen/tests/check_dkgen.sh DKGEN OUT_DIR
dkgen=$1; out=$2
mkdir -p "$out"
ok=0; bad=0
check() { # label, command...
  label=$1; shift
  if "$@" > "$out/check.log" 2>&1; then ok=$((ok + 1)); echo "  ok    $label"
  else bad=$((bad + 1)); echo "  FAIL  $label"; sed 's/^/        /' "$out/check.log" | head -20; fi
}
ops() { grep -c '^/\* ---- ' "$1"; }   # operators in a header

# every error is reported with its line, and no header comes out
printf '%s\n' 'ok::a(Tensor x) -> Tensor' 'bad::b(Tensor x -> Tensor' '# a comment' \
  'ok::c(Tensor x) -> Tensor' 'bad::d(Tensor x, ) -> Tensor' '' 'ok::e(Tensor x) -> Tensor' > "$out/errors.txt"
printf 'bad::f(Tensor\000 x) -> Tensor\n' >> "$out/errors.txt"
rm -f "$out/errors.h"
check "errors name their lines (2, 5, 8), every line is read, exit status 1, no header" sh -c "
  ! '$dkgen' '$out/errors.txt' '$out/errors.h' 2> '$out/errors.err' &&
  grep -q 'errors.txt:2: ' '$out/errors.err' && grep -q 'errors.txt:5: ' '$out/errors.err' &&
  grep -q 'errors.txt:8: the line holds a NUL byte' '$out/errors.err' && grep -q '3 errors' '$out/errors.err' &&
  [ \$(grep -c 'errors.txt:[0-9]*:' '$out/errors.err') = 3 ] && [ ! -e '$out/errors.h' ] && [ ! -e '$out/errors.h.tmp' ]"

# a line longer than any buffer is one schema: its tail is not read as another
long=$(awk 'BEGIN { s = "long::op(Tensor self, str pad=\""; for (i = 0; i < 9000; i++) s = s "x";
                    print s " tail::op(Tensor y) -> Tensor\") -> Tensor" }')
printf '%s\n%s\n' "$long" 'ok::after(Tensor x) -> Tensor' > "$out/long.txt"
check "a 9,000-byte line is one operator, the next line another" sh -c "
  '$dkgen' '$out/long.txt' '$out/long.h' && [ \$(grep -c '^/\\* ---- ' '$out/long.h') = 2 ] &&
  grep -q 'long_op_def' '$out/long.h' && grep -q 'ok_after_def' '$out/long.h' && ! grep -q 'tail_op' '$out/long.h'"

# comments, blank lines, CRLF, trailing comments, '#' inside strings
printf '# comment\r\n\r\n  \t\r\nc::a(Tensor x, str s="#") -> Tensor # trailing\r\n   # indented comment\r\n' > "$out/comments.txt"
check "comments, blank lines, CRLF; '#' inside a string is not a comment" sh -c "
  '$dkgen' '$out/comments.txt' '$out/comments.h' && [ \$(grep -c '^/\\* ---- ' '$out/comments.h') = 1 ] &&
  grep -q 'c_a_SCHEMA \"c::a(Tensor x, str s=\\\\\"#\\\\\") -> Tensor\"' '$out/comments.h'"

# two operators with one C name both generate; the warning names both lines
printf '%s\n' 'my::a_b(Tensor x) -> Tensor' 'my::a.b(Tensor x) -> Tensor' > "$out/clash.txt"
check "my::a_b and my::a.b: both generate (my_a_b, my_a_b_2), a warning names lines 1 and 2" sh -c "
  '$dkgen' '$out/clash.txt' '$out/clash.h' 2> '$out/clash.err' &&
  grep -q 'clash.txt:2: warning: .* line 1 .* my_a_b_2' '$out/clash.err' &&
  grep -q 'my_a_b_def' '$out/clash.h' && grep -q 'my_a_b_2_def' '$out/clash.h' &&
  grep -q '#define my_a_b_2_NAME \"my::a.b\"' '$out/clash.h'"

# a default of a kind its type cannot hold is an error naming the line, the
# position and the reason (c10 takes them and fails when a kernel unboxes one)
printf '%s\n' 'k::a(Tensor x, int n=1.5) -> Tensor' 'k::b(Tensor x, bool n=1) -> Tensor' \
  'k::c(Tensor x, float n="x") -> Tensor' 'k::d(Tensor x, str n=1) -> Tensor' 'k::e(Tensor x, int n=True) -> Tensor' \
  'k::f(Tensor x, int n=None) -> Tensor' 'k::g(Tensor x, bool n="True") -> Tensor' \
  'k::ok(Tensor x, float a=1, Scalar b=True, int? c=None, ScalarType d=long) -> Tensor' > "$out/kinds.txt"
rm -f "$out/kinds.h"
check "the 7 wrong-kind defaults are errors (line, position, reason); c10's conversions are not" sh -c "
  ! '$dkgen' '$out/kinds.txt' '$out/kinds.h' 2> '$out/kinds.err' && grep -q '7 errors' '$out/kinds.err' &&
  grep -q 'kinds.txt:1: argument n of type int cannot have a float default at position 21' '$out/kinds.err' &&
  grep -q 'kinds.txt:2: argument n of type bool cannot have an int default' '$out/kinds.err' &&
  grep -q 'kinds.txt:6: argument n of type int cannot have a None default (only an optional type can)' '$out/kinds.err' &&
  ! grep -q 'kinds.txt:8' '$out/kinds.err' && [ ! -e '$out/kinds.h' ]"

# C type names are type variables in the schema language; a default without a C value: both said
printf '%s\n' 'c::f(Tensor x, double d, size_t n, complex[] z=[1j], complex w=1.+2.j) -> double' > "$out/ctypes.txt"
check "double and size_t are said to be type variables, complex[] z=[1j] to have no C value (complex w=1.+2.j has one); the header is written" sh -c "
  '$dkgen' '$out/ctypes.txt' '$out/ctypes.h' 2> '$out/ctypes.err' &&
  grep -q \"ctypes.txt:1: warning: argument d: 'double' is no schema type but a type variable .* the schema type is float\" '$out/ctypes.err' &&
  grep -q \"ctypes.txt:1: warning: argument n: 'size_t' is no schema type .* the schema type is int\" '$out/ctypes.err' &&
  grep -q \"ctypes.txt:1: warning: return (unnamed): 'double'\" '$out/ctypes.err' &&
  grep -q 'ctypes.txt:1: warning: argument z: the default \\[0.+1.j\\] has no C value of type dk_value_list; c_f_calld and c_f_call_opts take the argument as required' '$out/ctypes.err' &&
  ! grep -q 'argument w' '$out/ctypes.err' && grep -q 'dkgen_complex(1.0, 2.0)' '$out/ctypes.h' &&
  grep -q 'c_f_def' '$out/ctypes.h'"

# an empty file is an empty header; a missing file is an error
: > "$out/empty.txt"
check "an empty file gives a header without operators; a missing one exits 1" sh -c "
  '$dkgen' '$out/empty.txt' '$out/empty.h' && grep -q 'DKGEN_EMPTY_H' '$out/empty.h' &&
  ! '$dkgen' '$out/missing.txt' '$out/missing.h' 2>/dev/null"

# the generated code calls dispatch.h's public API only (schema text and comments aside)
check "no internal name of dispatch.h (dk__*, DK__*) in generated code" sh -c "
  '$dkgen' gen/tests/adversarial.txt '$out/names.h' 2>/dev/null &&
  ! grep -v -e '^/\* ---- ' -e '_SCHEMA \"' '$out/names.h' | grep -nE '(^|[^A-Za-z0-9_])(dk__|DK__)'"

echo "$ok $bad" > "$out/check.count"
[ "$bad" = 0 ]
