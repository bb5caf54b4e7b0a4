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
check "a typed registration (DK_IMPL_TYPED) of a kernel of the right type compiles and runs" \
  sh -c "$cc $cflags tests/structure/typed_kernel.c -o $out/typed_kernel && $out/typed_kernel"
check "a typed registration of a kernel without (kernel, ks) does not compile" \
  sh -c "! $cc $cflags -DWRONG_KERNEL tests/structure/typed_kernel.c -o $out/typed_wrong > $out/typed_wrong.log 2>&1 && \
         grep -q 'incompatible' $out/typed_wrong.log"
check "gen/'s <op>_impl of a kernel without (kernel, ks) does not compile (and of the right one runs)" \
  sh -c "$cc $cflags -Igen tests/structure/typed_gen_kernel.c -o $out/typed_gen && $out/typed_gen && \
         ! $cc $cflags -Igen -DWRONG_KERNEL tests/structure/typed_gen_kernel.c -o $out/typed_gen_wrong \
             > $out/typed_gen_wrong.log 2>&1 && grep -q 'incompatible' $out/typed_gen_wrong.log"
check "the header's table of contents lists every >>tag, in the file's order" sh -c '
  toc=$(sed -n "/TABLE OF CONTENTS/,/CONFIGURATION MACROS/p" dispatch.h | sed 1d | grep -o ">>[a-z-]*" | tr "\n" " ")
  body=$(grep -o "^/\* >>[a-z-]*" dispatch.h | sed "s|/\* ||" | tr "\n" " ")
  [ "$toc" = "$body" ] || { echo "TOC:  $toc"; echo "file: $body"; exit 1; }'
# README's examples: each block after <!-- example:NAME --> is extracted to
# example.c, compiled with the strict flags, run, and its output compared
# with tests/readme_NAME.out.
for name in $(sed -n 's/^<!-- example:\([a-z_]*\) -->$/\1/p' README.md); do
  mkdir -p "$out/readme_$name"
  sed -n "/<!-- example:$name -->/,/^\`\`\`\$/p" README.md | sed '1,2d;$d' > "$out/readme_$name/example.c"
  check "README example '$name' compiles and prints what README says" \
    sh -c "cd $out/readme_$name && $cc $cflags -I\"$(pwd)\" -I\"$(pwd)/gen\" example.c -o example -lpthread && ./example > output.txt && \
           diff \"$(pwd)/tests/readme_$name.out\" output.txt"
  if grep -q "^<!-- output:$name -->$" README.md; then
    awk -v m="<!-- output:$name -->" '$0 == m { on = 1; next } on == 1 && /^```/ { on = 2; next }
      on == 2 && /^```/ { exit } on == 2' README.md > "$out/readme_$name/shown.txt"
    check "README shows the real output of '$name'" diff tests/readme_$name.out "$out/readme_$name/shown.txt"
  fi
done
echo "$ok $bad" > "$build/results/structure.count"
[ "$bad" = 0 ]
