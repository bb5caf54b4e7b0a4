#!/bin/sh
# Structural checks (STB conventions): prints one line per check and writes
# "<passed> <failed>" to $build/results/structure.count.
cc=$1; cflags=$2; build=$3
out=$build/structure; mkdir -p "$out" "$build/results"
ok=0; bad=0
check() { # name, command...
  label=$1; shift
  if "$@" > "$out/log" 2>&1; then ok=$((ok + 1)); echo "  ok    $label"
  else bad=$((bad + 1)); echo "  FAIL  $label"; cat "$out/log"; fi
}
check "header twice in one unit, implementation in another" \
  sh -c "$cc $cflags tests/structure/twice.c tests/structure/impl.c -o $out/twice && $out/twice"
check "two DISPATCH_STATIC units linked into one program" \
  sh -c "$cc $cflags tests/structure/static_a.c tests/structure/static_b.c -o $out/static && $out/static"
check "a program without DISPATCH_IMPLEMENTATION fails to link, naming it" \
  sh -c "! $cc $cflags tests/structure/twice.c -o $out/no_impl > $out/no_impl.log 2>&1 && \
         grep -q 'undefined reference to .dk_no_file_defines_DISPATCH_IMPLEMENTATION_before_including_dispatch_h' \
           $out/no_impl.log || { cat $out/no_impl.log; exit 1; }"
check "no exported symbol outside the dk_ prefix" \
  sh -c "$cc $cflags -O2 -c tests/structure/impl.c -o $out/impl.o && \
         bad=\$(nm -g --defined-only $out/impl.o | awk '{print \$3}' | grep -v '^dk_'); \
         [ -z \"\$bad\" ] || { echo \"exported: \$bad\"; exit 1; }"
check "DISPATCH_STATIC exports nothing" \
  sh -c "$cc $cflags -O2 -c tests/structure/static_b.c -o $out/static_b.o && \
         bad=\$(nm -g --defined-only $out/static_b.o | awk '{print \$3}' | grep -v '^static_b_name_is_cpu\$'); \
         [ -z \"\$bad\" ] || { echo \"exported: \$bad\"; exit 1; }"
for cfg in too_many_backends:"limit: at most 16 backend components" too_many_bits:"functionality keys <= 64"; do
  name=${cfg%%:*}; msg=${cfg#*:}
  check "the list limits reject $name.h" \
    sh -c "! $cc $cflags -std=c11 '-DDK_CONFIG_HEADER=\"$name.h\"' -Itests/structure -c tests/compile_all.c \
             -o $out/never.o > $out/$name.log 2>&1 && grep -q '$msg' $out/$name.log"
done
check "typed registrations (DK_IMPL_TYPED, DK_LIBRARY_IMPL_TYPED) of kernels of the right type compile and run" \
  sh -c "$cc $cflags tests/structure/typed_kernel.c -o $out/typed_kernel && $out/typed_kernel"
check "DK_DECLARE_OP's helpers leave kernel names (neg_slow, neg_invoke...) and operator names (call, lookup) free" \
  sh -c "$cc $cflags tests/structure/op_names.c -o $out/op_names && $out/op_names"
check "gen/'s <op>_impl and <op>_library_impl of kernels of the right type compile and run" \
  sh -c "$cc $cflags -Igen tests/structure/typed_gen_kernel.c -o $out/typed_gen && $out/typed_gen"
# A kernel of the wrong type (no (kernel, ks); a float for a double) must be
# an error with each compiler's DEFAULT flags (no -Werror: a warning is not
# enough), as C99, C11 and C++: each unit has two wrong registrations, and
# each must be an error (C: naming the kernel type expected).
cxx=${CXX:-g++}; clangxx=${CLANGXX:-clang++}; clang=${CLANG:-clang}
for file in typed_kernel typed_gen_kernel; do
  for comp in "$cc -std=c99" "$cc -std=c11" "$clang -std=c99" "$clang -std=c11" "$cxx -x c++" "$clangxx -x c++"; do
    case $comp in *c++*) want="error";; *) want="error.*wrong_kernel_type__expected_";; esac
    check "$file.c with kernels of the wrong type does not compile ($comp, default flags)" \
      sh -c "! $comp -I. -Igen -DWRONG_KERNEL -fsyntax-only tests/structure/$file.c > $out/${file}_wrong.log 2>&1 && \
             n=\$(grep -c '$want' $out/${file}_wrong.log) && [ \$n -ge 2 ] || { cat $out/${file}_wrong.log; exit 1; }"
  done
done
check "gen/'s <op>_calld with the counts of arguments it takes, and a NULL-safe DKGEN_TENSOR_KEYSET given NULL, compile and run" \
  sh -c "$cc $cflags -Igen tests/structure/gen_arity.c -o $out/gen_arity && $out/gen_arity"
for n in 2 5; do
  for comp in "$cc -std=c99" "$clang -std=c11" "$cxx -x c++"; do
    check "gen/'s <op>_calld with $n arguments does not compile, naming the operator and the counts ($comp)" \
      sh -c "! $comp -I. -Igen -DWRONG_ARITY=$n -fsyntax-only tests/structure/gen_arity.c > $out/gen_arity.log 2>&1 && \
             grep -q 'error.*sample_add_Tensor_calld__takes_3_to_4_arguments__not_$n' $out/gen_arity.log || \
             { cat $out/gen_arity.log; exit 1; }"
  done
done
check "the header's table of contents lists every >>tag, in the file's order" sh -c '
  toc=$(sed -n "/TABLE OF CONTENTS/,/KEYS AND KEYSETS (/p" dispatch.h | sed "1d;\$d" | grep -o ">>[a-z-]*" | tr "\n" " ")
  body=$(grep -o "^/\* >>[a-z-]*" dispatch.h | sed "s|/\* ||" | tr "\n" " ")
  [ "$toc" = "$body" ] || { echo "TOC:  $toc"; echo "file: $body"; exit 1; }'
# The documentation's examples: each block after <!-- example:NAME --> in
# README.md or docs/*.md is extracted to example.c, compiled with the strict
# flags, run, and its output compared with tests/readme_NAME.out (and with
# the block after <!-- output:NAME -->, when the page shows it).
found=0
for doc in README.md docs/*.md; do
  for name in $(sed -n 's/^<!-- example:\([a-z_]*\) -->$/\1/p' "$doc"); do
    found=$((found + 1))
    mkdir -p "$out/readme_$name"
    sed -n "/<!-- example:$name -->/,/^\`\`\`\$/p" "$doc" | sed '1,2d;$d' > "$out/readme_$name/example.c"
    check "$doc example '$name' compiles and prints what $doc says" \
      sh -c "cd $out/readme_$name && $cc $cflags -I\"$(pwd)\" -I\"$(pwd)/gen\" example.c -o example -lpthread && ./example > output.txt && \
             diff \"$(pwd)/tests/readme_$name.out\" output.txt"
    if grep -q "^<!-- output:$name -->$" "$doc"; then
      awk -v m="<!-- output:$name -->" '$0 == m { on = 1; next } on == 1 && /^```/ { on = 2; next }
        on == 2 && /^```/ { exit } on == 2' "$doc" > "$out/readme_$name/shown.txt"
      check "$doc shows the real output of '$name'" diff tests/readme_$name.out "$out/readme_$name/shown.txt"
    fi
  done
done
check "every tests/readme_*.out has its example in README.md or docs/" \
  sh -c "[ $found = \$(ls tests/readme_*.out | wc -l) ] || { echo '$found examples found'; ls tests/readme_*.out; exit 1; }"
# The manual's examples (the comment at the top of dispatch.h): each block
# between [example NAME] and [/example] is a whole program (indented by four
# spaces), compiled with the strict flags and run; what it prints must be the
# block between [output NAME] and [/output].
manual_end=$(grep -n '^\*/' dispatch.h | head -1 | cut -d: -f1)
sed -n "1,${manual_end}p" dispatch.h > "$out/manual.txt"
for name in $(sed -n 's/^ *\[example \([a-z_]*\)\]$/\1/p' "$out/manual.txt"); do
  mkdir -p "$out/manual_$name"
  sed -n "/^ *\[example $name\]\$/,/^ *\[\/example\]\$/p" "$out/manual.txt" | sed '1d;$d' | sed 's/^       //' \
    > "$out/manual_$name/example.c"
  sed -n "/^ *\[output $name\]\$/,/^ *\[\/output\]\$/p" "$out/manual.txt" | sed '1d;$d' | sed 's/^       //' \
    > "$out/manual_$name/shown.txt"
  check "the manual's example '$name' compiles and prints what the manual shows" \
    sh -c "cd $out/manual_$name && $cc $cflags -I\"$(pwd)\" example.c -o example -lpthread && ./example > output.txt && \
           diff shown.txt output.txt"
done
check "the manual has its STEP BY STEP example" test -s "$out/manual_steps/example.c"
# Every dk_ / DK_ name the manual mentions (outside its examples) is in the
# header after the manual: a function, type, macro or enumerator that exists.
check "every name the manual mentions exists in the header" sh -c '
  end=$1; out=$2
  names=$(sed "/^ *\[example/,/^ *\[\/example\]/d" "$out/manual.txt" |
          grep -o "\<[dD][kK]_[A-Za-z0-9_]*[A-Za-z0-9]\>" | sort -u)
  sed -n "$((end + 1)),\$p" dispatch.h > "$out/body.txt"
  missing=""
  for n in $names; do grep -q "\<$n\>" "$out/body.txt" || missing="$missing $n"; done
  [ -z "$missing" ] || { echo "named in the manual, not in the header:$missing"; exit 1; }' sh "$manual_end" "$out"
check "every public function, macro and type is declared in the >>public block" \
  python3 tools/where-declared.py dispatch.h --check
check "every declaration in the >>public block has its one-line comment from tools/one-line-api.txt (its contract is at its definition)" \
  python3 tools/one-line-api.py dispatch.h --check
check "every function of the implementation is in its region's optimisation span (COLD / COOL / WARM), the spans balanced" \
  python3 tools/spans.py dispatch.h
# Note [One read primitive]: the implementation reads an operator's snapshot
# and the name index only through dk__snapshot and dk__index_of (which the
# debug check guards); and every public function that takes an operator (or
# reads the name index) is called by tests/test_reads.c with the check on.
check "the implementation reads snapshots and the name index only through dk__snapshot / dk__index_of" sh -c '
  impl=$(grep -n "^/\* >>impl =" dispatch.h | cut -d: -f1)
  [ -n "$impl" ] || { echo "no >>impl tag"; exit 1; }
  bad=$(awk -v from="$impl" "NR > from && /dk_op_table_of\(|LOAD_ACQ\(&[a-z_]*->(index|table)\)|LOAD_ACQ\(&[a-z_]*->pub\.table\)/ && !/#define dk__(snapshot|index_of)/ { print NR, \$0 }" dispatch.h) || exit 1
  [ -z "$bad" ] || { echo "read outside the primitive:"; echo "$bad"; exit 1; }'
check "tests/test_reads.c calls every public function that reads an operator or the name index" sh -c '
  readers=$(awk "/^DK_(API|INLINE)/ && /dk_operator \\*/ { l = \$0; sub(/\\(.*/, \"\", l); n = split(l, w, /[ *]+/); print w[n] }" dispatch.h |
            grep -v "^dk__" | sort -u) || exit 1
  # not readers: dk_op_set_adapters writes under the lock; dk_call_error_abort ends the program
  [ $(echo "$readers" | wc -l) -ge 30 ] || { echo "found only: $readers"; exit 1; }
  missing=""
  for f in $readers dk_registry_html_to_string; do
    case $f in dk_op_set_adapters|dk_call_error_abort) continue;; esac
    grep -q "\<$f(" tests/test_reads.c || missing="$missing $f"
  done
  [ -z "$missing" ] || { echo "public readers no test in tests/test_reads.c calls:$missing"; exit 1; }'
# A user unit that includes the header (no implementation) is clean under
# -Wconversion -Wsign-conversion -Wcast-qual (and -Wbad-function-cast, a C
# warning), as C and as C++: a one-liner, and minitensor's operators (the
# typed call path, DK_DECLARE_OP and the typed registrations expanded).
printf '#include "dispatch.h"\nint main(void) { return dk_ks_slot(dk_ks_from_key(DK_CPU)) < 0; }\n' > "$out/user_unit.c"
for comp in "$cc -std=c99" "${CLANG:-clang} -std=c11" "${CXX:-g++} -x c++" "${CLANGXX:-clang++} -x c++"; do
  case $comp in *c++*) strict="-Wcast-qual";; *) strict="-Wcast-qual -Wbad-function-cast";; esac
  for unit in $out/user_unit.c examples/minitensor/minitensor.c; do
    check "$(basename $unit), including dispatch.h, is clean under -Wconversion -Wsign-conversion $strict ($comp)" \
      sh -c "$comp -Wall -Wextra -Wconversion -Wsign-conversion $strict -Werror -I. -Iexamples/minitensor -c $unit -o $out/user_unit.o"
  done
done
# A plugin loaded by a host that does not export the implementation (linked
# without -rdynamic): dlopen's message names the fix in the host.
check "a plugin dlopen'ed by a host linked without -rdynamic names -rdynamic and libdispatch.so" \
  sh -c "$cc $cflags -fPIC -shared examples/plugin-host/npu.c -o $out/npu.so && \
         $cc $cflags examples/plugin-host/host.c -o $out/host_no_rdynamic -ldl -lpthread && \
         ! $out/host_no_rdynamic $out/npu.so > $out/no_rdynamic.log 2>&1 && \
         grep -q 'undefined symbol: dk_plugin_finds_no_dispatch_h_in_its_host__link_the_host_with_rdynamic_or_libdispatch_so' \
           $out/no_rdynamic.log || { cat $out/no_rdynamic.log; exit 1; }"
# A unit that includes the header and calls one function defines no table,
# even at -O0, where compilers keep unused static const arrays (Note [Tables
# in one unit]): its only data is dk__link_check. And it preprocesses to at
# most 150 KB (bench/compile_cost.sh times it).
printf '#include "dispatch.h"\nint one_call(void);\nint one_call(void) { return dk_version_number(); }\n' > "$out/one_call.c"
for comp in "$cc -std=c99" "${CLANG:-clang} -std=c11" "${CXX:-g++} -x c++"; do
  check "a unit that includes dispatch.h and calls one function emits no table at -O0 ($comp)" \
    sh -c "$comp -O0 -I. -c $out/one_call.c -o $out/one_call.o && \
           data=\$(nm $out/one_call.o | awk '\$2 ~ /^[bBcCdDgGrRsSvV]\$/ { print \$3 }' | grep -v 'dk__link_check\$'); \
           [ -z \"\$data\" ] || { echo \"data symbols: \$data\"; exit 1; }"
done
check "a unit that includes dispatch.h preprocesses to at most 150 KB" \
  sh -c "n=\$($cc -std=c99 -I. -E -P $out/one_call.c | wc -c); echo \"\$n bytes\"; [ \$n -le 153600 ]"
echo "$ok $bad" > "$build/results/structure.count"
[ "$bad" = 0 ]
