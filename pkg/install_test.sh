#!/bin/sh
# make install-test: `make install` into a scratch prefix, then consumers
# built against the installed files only (README's first example through
# pkg-config, through CMake, linked with libdispatch.so and libdispatch.a;
# the installed dkgen and README's gen example), then `make uninstall`.
# Prints one line per check and writes "<passed> <failed>" to
# <results>/install.count.
# Usage: pkg/install_test.sh <scratch dir (absolute)> <results dir>
# Environment: MAKE, CC, CMAKE, PKGCONF, STRICT (the compile flags, no -I).
dir=$1; results=$2
prefix=$dir/prefix; src=$dir/consumer; repo=$(pwd)
MAKE=${MAKE:-make}; CC=${CC:-cc}; CMAKE=${CMAKE:-cmake}; PKGCONF=${PKGCONF:-pkgconf}
rm -rf "$dir"; mkdir -p "$src/lib" "$dir/gen" "$results"
ok=0; bad=0
check() { # label, command...
  label=$1; shift
  if "$@" > "$dir/log" 2>&1; then ok=$((ok + 1)); echo "  ok    $label"
  else bad=$((bad + 1)); echo "  FAIL  $label"; tail -40 "$dir/log" | sed 's/^/        /'; fi
}
# README's example NAME into DIR/example.c (as tests/structure.sh extracts it)
extract() {
  sed -n "/<!-- example:$1 -->/,/^\`\`\`\$/p" README.md | sed '1,2d;$d' > "$2/example.c"
}
installed() { (cd "$prefix" && find . \( -type f -o -type l \) | sort | tr '\n' ' '); }

name=$(sed -n 's/^<!-- example:\([a-z_]*\) -->$/\1/p' README.md | head -1)
expected=$repo/tests/readme_$name.out
extract "$name" "$src"
# the same program using the library: the DISPATCH_IMPLEMENTATION line emptied,
# so that the name and line numbers dk_explain prints stay the same
sed 's/^#define DISPATCH_IMPLEMENTATION.*$//' "$src/example.c" > "$src/lib/example.c"

files="./bin/dkgen ./include/dispatch.h ./lib/cmake/dispatch/dispatchConfig.cmake ./lib/cmake/dispatch/dispatchConfigVersion.cmake ./lib/libdispatch.a ./lib/libdispatch.so ./lib/pkgconfig/dispatch.pc "
check "make install PREFIX=<scratch>: header, dkgen, libdispatch.so/.a, pkg-config and CMake files" sh -c '
  '"$MAKE"' --no-print-directory install PREFIX="$1" && got=$(cd "$1" && find . \( -type f -o -type l \) | sort | tr "\n" " ") &&
  { [ "$got" = "$2" ] || { echo "installed: $got"; echo "expected:  $2"; exit 1; }; }' sh "$prefix" "$files"

# Exports: every DK_API name the header declares (found by preprocessing it with
# DK_API as a marker), and nothing that is not dk_.
check "libdispatch.so exports the DK_API functions and variables of the header, and nothing else" sh -c '
  lib=$1/lib/libdispatch.so; hdr=$1/include/dispatch.h
  '"$CC"' -E -P -DDK_API=DK__API_MARK -x c "$hdr" | tr -s " \n" "  " | sed "s/;/;\n/g; s/{/{\n/g" |
    sed -n "s/.*DK__API_MARK[^(;]*[^a-zA-Z0-9_]\(dk_[a-zA-Z0-9_]*\) *(.*/\1/p; t; s/.*DK__API_MARK.*[^a-zA-Z0-9_]\(dk_[a-zA-Z0-9_]*\) *\(__attribute__.*\)\{0,1\};.*/\1/p" |
    sort -u > "$2/declared.txt"
  nm -D --defined-only "$lib" | awk "{print \$3}" | sort -u > "$2/exported.txt"
  n=$(wc -l < "$2/declared.txt"); [ "$n" -gt 50 ] || { echo "only $n DK_API names found in the header"; exit 1; }
  missing=$(comm -23 "$2/declared.txt" "$2/exported.txt"); other=$(comm -13 "$2/declared.txt" "$2/exported.txt")
  [ -z "$missing" ] || { echo "declared DK_API, not exported:"; echo "$missing"; }
  [ -z "$other" ] || { echo "exported, not declared DK_API:"; echo "$other"; }
  [ -z "$missing$other" ] && echo "$n declared, $(wc -l < "$2/exported.txt") exported"' sh "$prefix" "$dir"

run_example() { # binary: run it, compare with README's output
  "$1" > "$1.out" && diff "$expected" "$1.out"
}

check "README example '$name' built with pkg-config ($PKGCONF --cflags --libs dispatch)" sh -c '
  flags=$(PKG_CONFIG_PATH="$1/lib/pkgconfig" '"$PKGCONF"' --cflags --libs dispatch) || exit 1
  echo "flags: $flags"; case " $flags " in *" -I$1/include "*) ;; *) echo "no -I$1/include"; exit 1;; esac
  cd "$2" && '"$CC $STRICT"' example.c -o "$2/pkgconfig" $flags' sh "$prefix" "$src" && \
  check "  ... and prints what README says" run_example "$src/pkgconfig"

check "README example '$name' built with CMake: find_package(dispatch), dispatch::dispatch and dispatch::shared" sh -c '
  '"$CMAKE"' -S "$3/pkg/consumer" -B "$2/cmake" -DCMAKE_PREFIX_PATH="$1" -DEXAMPLE_DIR="$4" -DEXAMPLE_LIB_DIR="$4/lib" \
    -DCMAKE_C_COMPILER='"$CC"' -DCMAKE_C_FLAGS="'"$STRICT"'" &&
  grep -qx "dispatch_DIR:PATH=$1/lib/cmake/dispatch" "$2/cmake/CMakeCache.txt" &&
  '"$CMAKE"' --build "$2/cmake" -- VERBOSE=1' sh "$prefix" "$dir" "$repo" "$src" && {
  check "  ... dispatch::dispatch prints what README says" run_example "$dir/cmake/example"
  check "  ... dispatch::shared: needs libdispatch.so, defines no dk_ function" sh -c '
    readelf -d "$1" | grep -q "NEEDED.*\[libdispatch.so\]" && ! nm --defined-only "$1" | grep " [Tt] dk_"' sh "$dir/cmake/example_shared" &&
  check "  ... and prints what README says" run_example "$dir/cmake/example_shared"
}

check "README example '$name' without DISPATCH_IMPLEMENTATION, linked with libdispatch.so (-DDK_SHARED, pkg-config, rpath)" sh -c '
  flags=$(PKG_CONFIG_PATH="$1/lib/pkgconfig" '"$PKGCONF"' --cflags --libs dispatch) || exit 1
  cd "$2" && '"$CC $STRICT"' -DDK_SHARED example.c -o "$2/shared" $flags -L"$1/lib" -ldispatch -Wl,-rpath,"$1/lib" &&
  readelf -d "$2/shared" | grep -q "NEEDED.*\[libdispatch.so\]" &&
  ! nm --defined-only "$2/shared" | grep " [Tt] dk_"' sh "$prefix" "$src/lib" && \
  check "  ... and prints what README says" run_example "$src/lib/shared"

check "README example '$name' without DISPATCH_IMPLEMENTATION, linked with libdispatch.a" sh -c '
  cd "$2" && '"$CC $STRICT"' -I"$1/include" example.c "$1/lib/libdispatch.a" -o "$2/static" -lpthread' \
  sh "$prefix" "$src/lib" && check "  ... and prints what README says" run_example "$src/lib/static"

mkdir -p "$dir/gen/example"; extract gen "$dir/gen/example"
check "installed dkgen: gen/sample_ops.txt gives the committed gen/sample_ops.h" sh -c '
  "$1/bin/dkgen" gen/sample_ops.txt "$2/sample_ops.h" && diff gen/sample_ops.h "$2/sample_ops.h"' sh "$prefix" "$dir/gen"
check "README example 'gen' against the installed header and the generated sample_ops.h, as README says" sh -c '
  cd "$2/example" && '"$CC $STRICT"' -I"$1/include" -I"$2" example.c -o example -lpthread && ./example > output.txt &&
  diff "$3/tests/readme_gen.out" output.txt' sh "$prefix" "$dir/gen" "$repo"

check "make uninstall PREFIX=<scratch> leaves no file in the prefix" sh -c '
  '"$MAKE"' --no-print-directory uninstall PREFIX="$1" && left=$(cd "$1" && find . \( -type f -o -type l \)) &&
  { [ -z "$left" ] || { echo "left: $left"; exit 1; }; } && [ ! -d "$1/lib/cmake/dispatch" ]' sh "$prefix"

echo "$ok $bad" > "$results/install.count"
[ "$bad" = 0 ]
