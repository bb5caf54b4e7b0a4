#!/bin/sh
# make install-test: `make install` into a scratch prefix, then consumers
# built against the installed files only (README's first example through
# pkg-config, through CMake, linked with libdispatch.so and libdispatch.a;
# the installed dkgen and README's gen example), again after the prefix
# moved; then a non-default configuration installed (`make install
# CONFIG=...`: other key lists and DK_CALL_EPOCHS) and a consumer built in
# it through its pkg-config and CMake files only; then `make uninstall`.
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
  cat README.md docs/*.md | sed -n "/<!-- example:$1 -->/,/^\`\`\`\$/p" | sed '1,2d;$d' > "$2/example.c"
}
installed() { (cd "$prefix" && find . \( -type f -o -type l \) | sort | tr '\n' ' '); }

name=$(sed -n 's/^<!-- example:\([a-z_]*\) -->$/\1/p' README.md | head -1)
expected=$repo/tests/readme_$name.out
extract "$name" "$src"
# the same program using the library: the DISPATCH_IMPLEMENTATION line emptied,
# so that the name and line numbers dk_explain prints stay the same
sed 's/^#define DISPATCH_IMPLEMENTATION.*$//' "$src/example.c" > "$src/lib/example.c"

files=$(printf '%s\n' ./bin/dkgen ./include/dispatch.h ./lib/cmake/dispatch/dispatchConfig.cmake \
  ./lib/cmake/dispatch/dispatchConfigVersion.cmake ./lib/libdispatch.a ./lib/libdispatch.so ./lib/pkgconfig/dispatch.pc \
  ./lib/pkgconfig/dispatch-lib.pc | sort | tr '\n' ' ')
check "make install PREFIX=<scratch>: header, dkgen, libdispatch.so/.a, pkg-config (dispatch, dispatch-lib) and CMake files" sh -c '
  '"$MAKE"' --no-print-directory install PREFIX="$1" && got=$(cd "$1" && find . \( -type f -o -type l \) | sort | tr "\n" " ") &&
  { [ "$got" = "$2" ] || { echo "installed: $got"; echo "expected:  $2"; exit 1; }; }' sh "$prefix" "$files"

# Exports: every DK_API name the header declares (found by preprocessing it with
# DK_API as a marker), and nothing that is not dk_.
check "libdispatch.so exports the DK_API functions and variables of the header, and nothing else" sh -c '
  lib=$1/lib/libdispatch.so; hdr=$1/include/dispatch.h
  '"$CC"' -E -P -DDK_API=DK__API_MARK -x c "$hdr" | tr -s " \n" "  " | sed "s/;/;\n/g; s/{/{\n/g" |
    sed -n "s/.*DK__API_MARK.*__asm__(\"[^\"]*\" *\"\(dk_[a-zA-Z0-9_]*\)\").*/\1/p; t; s/.*DK__API_MARK[^(;]*[^a-zA-Z0-9_]\(dk_[a-zA-Z0-9_]*\) *(.*/\1/p; t; s/.*DK__API_MARK.*[^a-zA-Z0-9_]\(dk_[a-zA-Z0-9_]*\) *\(__attribute__.*\)\{0,1\};.*/\1/p" |
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
  echo "flags: $flags"; case " $flags " in *" -I$1/lib/pkgconfig/../../include "*) ;; *) echo "no -I$1/lib/pkgconfig/../../include"; exit 1;; esac
  cd "$2" && '"$CC $STRICT"' example.c -o "$2/pkgconfig" $flags' sh "$prefix" "$src" && \
  check "  ... and prints what README says" run_example "$src/pkgconfig"

check "README example '$name' built with CMake: find_package(dispatch), dispatch::dispatch, dispatch::shared, dispatch::static" sh -c '
  '"$CMAKE"' -S "$3/pkg/consumer" -B "$2/cmake" -DCMAKE_PREFIX_PATH="$1" -DEXAMPLE_DIR="$4" -DEXAMPLE_LIB_DIR="$4/lib" \
    -DCMAKE_C_COMPILER='"$CC"' -DCMAKE_C_FLAGS="'"$STRICT"'" &&
  grep -qx "dispatch_DIR:PATH=$1/lib/cmake/dispatch" "$2/cmake/CMakeCache.txt" &&
  '"$CMAKE"' --build "$2/cmake" -- VERBOSE=1' sh "$prefix" "$dir" "$repo" "$src" && {
  check "  ... dispatch::dispatch prints what README says" run_example "$dir/cmake/example"
  check "  ... dispatch::shared: needs libdispatch.so, defines no dk_ function (but its own DK_DECLARE_OP helpers, dk__declared_*)" sh -c '
    readelf -d "$1" | grep -q "NEEDED.*\[libdispatch.so\]" && ! nm --defined-only "$1" | grep " [Tt] dk_" | grep -v " dk__declared_"' sh "$dir/cmake/example_shared" &&
  check "  ... and prints what README says" run_example "$dir/cmake/example_shared"
  check "  ... dispatch::static: links libdispatch.a, needs no libdispatch.so, and prints what README says" sh -c '
    ! readelf -d "$1" | grep -q "NEEDED.*libdispatch" && nm --defined-only "$1" | grep -q " [Tt] dk__impl$"' \
    sh "$dir/cmake/example_static" && run_example "$dir/cmake/example_static"
}

check "README example '$name' without DISPATCH_IMPLEMENTATION, linked with libdispatch.so ($PKGCONF --cflags --libs dispatch-lib, rpath)" sh -c '
  flags=$(PKG_CONFIG_PATH="$1/lib/pkgconfig" '"$PKGCONF"' --cflags --libs dispatch-lib) || exit 1
  echo "flags: $flags"; case " $flags " in *" -DDK_SHARED "*) ;; *) echo "no -DDK_SHARED"; exit 1;; esac
  case " $flags " in *" -ldispatch "*) ;; *) echo "no -ldispatch"; exit 1;; esac
  cd "$2" && '"$CC $STRICT"' example.c -o "$2/shared" $flags -Wl,-rpath,"$1/lib" &&
  readelf -d "$2/shared" | grep -q "NEEDED.*\[libdispatch.so\]" &&
  ! nm --defined-only "$2/shared" | grep " [Tt] dk_" | grep -v " dk__declared_"' sh "$prefix" "$src/lib" && \
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

# The installed files name no absolute path: the prefix moves, consumers still build.
check "the installed .pc and .cmake files hold no absolute path ($prefix)" sh -c '
  ! grep -rl "$1" "$1/lib/pkgconfig" "$1/lib/cmake"' sh "$prefix"
mv "$prefix" "$dir/moved"
check "the prefix moved: README example '$name' built with pkg-config, linked with libdispatch.so" sh -c '
  flags=$(PKG_CONFIG_PATH="$1/lib/pkgconfig" '"$PKGCONF"' --cflags --libs dispatch-lib) || exit 1
  echo "flags: $flags"; case " $flags " in *" -I$1/lib/pkgconfig/../../include "*) ;; *) echo "not under $1"; exit 1;; esac
  cd "$2" && '"$CC $STRICT"' example.c -o "$2/moved" $flags -Wl,-rpath,"$1/lib"' sh "$dir/moved" "$src/lib" && \
  check "  ... and prints what README says" run_example "$src/lib/moved"
check "the prefix moved: README example '$name' built with CMake (dispatch::dispatch, dispatch::shared, dispatch::static)" sh -c '
  '"$CMAKE"' -S "$3/pkg/consumer" -B "$2/cmake-moved" -DCMAKE_PREFIX_PATH="$1" -DEXAMPLE_DIR="$4" -DEXAMPLE_LIB_DIR="$4/lib" \
    -DCMAKE_C_COMPILER='"$CC"' -DCMAKE_C_FLAGS="'"$STRICT"'" && '"$CMAKE"' --build "$2/cmake-moved" &&
  for e in example example_shared example_static; do "$2/cmake-moved/$e" > "$2/cmake-moved/$e.out" &&
    diff "$5" "$2/cmake-moved/$e.out" || exit 1; done' sh "$dir/moved" "$dir" "$repo" "$src" "$expected"
mv "$dir/moved" "$prefix"

# A non-default configuration, installed beside the default one: other key
# lists (a header, passed without quotes) and call epochs.
cfg="CONFIG=custom-epochs CONFIG_HEADER=tests/custom_config.h CONFIG_DEFINES=DK_CALL_EPOCHS"
cfgsrc=$dir/config; mkdir -p "$cfgsrc"; cp "$repo/pkg/consumer/config_consumer.c" "$cfgsrc/"
expected_cfg="twice(21) = 42; backends: 2, the second GPUBit"
check "make install $cfg: libdispatch-custom-epochs.so/.a, custom_config.h, pkg-config dispatch-custom-epochs(-lib), CMake dispatch-custom-epochs" sh -c '
  '"$MAKE"' --no-print-directory install PREFIX="$1" '"$cfg"' &&
  for f in include/custom_config.h lib/libdispatch-custom-epochs.so lib/libdispatch-custom-epochs.a \
           lib/pkgconfig/dispatch-custom-epochs.pc lib/pkgconfig/dispatch-custom-epochs-lib.pc \
           lib/cmake/dispatch-custom-epochs/dispatch-custom-epochsConfig.cmake; do
    [ -f "$1/$f" ] || { echo "missing $f"; exit 1; }; done &&
  grep -q "^Cflags: .*-DDK_CALL_EPOCHS -DDK_CONFIG_HEADER_FILE=custom_config.h" "$1/lib/pkgconfig/dispatch-custom-epochs.pc"' sh "$prefix"
check "  ... the consumer header only, with $PKGCONF --cflags --libs dispatch-custom-epochs, prints '$expected_cfg'" sh -c '
  flags=$(PKG_CONFIG_PATH="$1/lib/pkgconfig" '"$PKGCONF"' --cflags --libs dispatch-custom-epochs) || exit 1
  echo "flags: $flags"; cd "$2" && '"$CC $STRICT"' -DCONSUMER_IMPLEMENTATION config_consumer.c -o header_only $flags &&
  ./header_only && [ "$(./header_only)" = "$3" ]' sh "$prefix" "$cfgsrc" "$expected_cfg"
check "  ... linked with libdispatch-custom-epochs.so ($PKGCONF dispatch-custom-epochs-lib) prints the same" sh -c '
  flags=$(PKG_CONFIG_PATH="$1/lib/pkgconfig" '"$PKGCONF"' --cflags --libs dispatch-custom-epochs-lib) || exit 1
  echo "flags: $flags"; cd "$2" && '"$CC $STRICT"' config_consumer.c -o shared $flags -Wl,-rpath,"$1/lib" &&
  readelf -d shared | grep -q "NEEDED.*\[libdispatch-custom-epochs.so\]" && [ "$(./shared)" = "$3" ]' sh "$prefix" "$cfgsrc" "$expected_cfg"
check "  ... built with CMake, find_package(dispatch-custom-epochs): dispatch::dispatch, dispatch::shared, dispatch::static print the same" sh -c '
  '"$CMAKE"' -S "$3/pkg/consumer" -B "$2/cmake" -DCMAKE_PREFIX_PATH="$1" -DDISPATCH_PACKAGE=dispatch-custom-epochs \
    -DCMAKE_C_COMPILER='"$CC"' -DCMAKE_C_FLAGS="'"$STRICT"'" &&
  '"$CMAKE"' --build "$2/cmake" -- VERBOSE=1 &&
  for e in config_header_only config_shared config_static; do [ "$("$2/cmake/$e")" = "$4" ] || { echo "$e: $("$2/cmake/$e")"; exit 1; }; done' \
  sh "$prefix" "$cfgsrc" "$repo" "$expected_cfg"
check "  ... the consumer without the configuration's flags does not link with libdispatch-custom-epochs.so (dk__tls_c...)" sh -c '
  cd "$2" && ! '"$CC $STRICT"' -I"$1/include" -DDK_SHARED config_consumer.c -o unconfigured -L"$1/lib" -ldispatch-custom-epochs \
    -pthread 2> link.log && cat link.log && grep -q "undefined reference to .dk__tls_c" link.log' sh "$prefix" "$cfgsrc"
check "make uninstall $cfg removes that configuration, and leaves the default one whole" sh -c '
  '"$MAKE"' --no-print-directory uninstall PREFIX="$1" '"$cfg"' && [ ! -e "$1/lib/libdispatch-custom-epochs.so" ] &&
  [ ! -e "$1/include/custom_config.h" ] && [ ! -d "$1/lib/cmake/dispatch-custom-epochs" ] &&
  got=$(cd "$1" && find . \( -type f -o -type l \) | sort | tr "\n" " ") &&
  { [ "$got" = "$2" ] || { echo "left: $got"; echo "expected: $2"; exit 1; }; }' sh "$prefix" "$files"

check "make uninstall PREFIX=<scratch> leaves nothing in the prefix (no file, no empty directory it made)" sh -c '
  '"$MAKE"' --no-print-directory uninstall PREFIX="$1" && left=$(cd "$1" && find . -mindepth 1) &&
  { [ -z "$left" ] || { echo "left: $left"; exit 1; }; }' sh "$prefix"

echo "$ok $bad" > "$results/install.count"
[ "$bad" = 0 ]
