#!/bin/sh
# One target of make test-cross (tests/cross/cross.mk): builds
# tests/cross/runner.c in both reclamation modes, the plugin of
# tests/plugin, and README's examples for the target, runs them there
# (natively, under qemu-user or under wine) and compares what they print
# with the host's, byte for byte. Prints one "ok"/"FAIL" line; the log is
# OUT/NAME/log, the verdict OUT/NAME/verdict ("ok" or "bad").
#
# usage: target.sh NAME OUT        (run from the repository's root)
# environment: CC (the host compiler), WARN (the project's warning flags)
set -u
name=$1
mkdir -p "$2/$name"
top=$(pwd)
out=$(cd "$2/$name" && pwd)
host=$(cd "$2" && pwd)/host
log=$out/log
: > "$log"
warn=${WARN:--pedantic -Wall -Wextra -Werror}
# xxhash.h is arch-independent: a copy, so that no cross compiler sees the host's /usr/include
mkdir -p "$out/include" && cp /usr/include/xxhash.h "$out/include/"
cflags="-std=c99 $warn -O1 -I. -Itests/plugin -I$out/include"
schemas=tests/conformance/schemas-1.13.1.txt

exe=""; so=.so; run=""; libs="-lpthread -ldl"; ldflags=-rdynamic; soflags="-fPIC -shared"
modes="default epochs"; extra=""; plugin=yes; crlf=no; libload=yes
case $name in
  host)    cc=${CC:-cc} ;;
  i686)    cc=i686-linux-gnu-gcc   # i386 code runs natively on x86-64, with its own loader
           run="/usr/i686-linux-gnu/lib/ld-linux.so.2 --library-path /usr/i686-linux-gnu/lib" ;;
  armhf)   cc=arm-linux-gnueabihf-gcc; run="qemu-arm -L /usr/arm-linux-gnueabihf" ;;
  aarch64) cc=aarch64-linux-gnu-gcc; run="qemu-aarch64 -L /usr/aarch64-linux-gnu" ;;
  s390x)   cc=s390x-linux-gnu-gcc; run="qemu-s390x -L /usr/s390x-linux-gnu" ;;
  musl)    cc=musl-gcc; extra=-DRUNNER_NO_UNLOAD; libs="" ;;   # musl's dlclose keeps the object
  mingw)   cc=x86_64-w64-mingw32-gcc; exe=.exe; so=.dll; libs=""; crlf=yes; soflags="-shared -static-libgcc"; ldflags=-static-libgcc
           run="wine"; export WINEDEBUG=-all WINEPREFIX="$(cd "$2" && pwd)/wineprefix" WINEDLLOVERRIDES=winedbg.exe=d ;;
  mingw-interlocked)                  # the MSVC atomics (Interlocked*) under mingw-w64
           cc=x86_64-w64-mingw32-gcc; exe=.exe; so=.dll; libs=""; crlf=yes; soflags="-shared -static-libgcc"; ldflags=-static-libgcc
           extra=-DDK_WIN32_ATOMICS
           run="wine"; export WINEDEBUG=-all WINEPREFIX="$(cd "$2" && pwd)/wineprefix" WINEDLLOVERRIDES=winedbg.exe=d ;;
  tcc)     cc=tcc; cflags="-std=c99 -Wall -Werror -I. -Itests/plugin -I$out/include"; extra=-DDK_SINGLE_THREADED
           libs="-lpthread -ldl"; ldflags=""; plugin=no; libload=no ;;   # no constructors, one thread
  *)       echo "target.sh: unknown target $name" >&2; exit 2 ;;
esac

bad=0; checked=0
fail() { bad=$((bad + 1)); echo "FAIL: $*" >> "$log"; }
# runs a command, its output to $1 (carriage returns dropped: wine's text mode)
run_to() {
  o=$1; shift
  "$@" > "$o.raw" 2>> "$log"; r=$?
  if [ $crlf = yes ]; then tr -d '\r' < "$o.raw" > "$o"; else mv "$o.raw" "$o"; fi
  return $r
}

if ! command -v "$cc" > /dev/null 2>&1; then
  echo "  FAIL  $name: compiler $cc not installed (make deps)"; echo bad > "$out/verdict"; exit 1
fi

for m in $modes; do
  mflags=""; [ $m = epochs ] && mflags=-DDK_CALL_EPOCHS
  r=$out/runner-$m$exe
  implib=""; [ $so = .dll ] && implib="-Wl,--export-all-symbols -Wl,--out-implib,$out/runner-$m.a"
  if ! $cc $cflags $extra $mflags $ldflags tests/cross/runner.c -o "$r" $implib $libs >> "$log" 2>&1; then
    fail "runner ($m) does not build"; continue
  fi
  args="$schemas"
  if [ $plugin = yes ]; then
    p=$out/plugin-$m$so
    pl=""; [ $so = .dll ] && pl="$out/runner-$m.a"
    if $cc $cflags $mflags $soflags tests/plugin/plugin.c -o "$p" $pl >> "$log" 2>&1; then args="$args $p"
    else fail "plugin ($m) does not build"; fi
  fi
  echo "== runner ($m): $run $r $args" >> "$log"
  # shellcheck disable=SC2086
  if ! run_to "$out/out-$m.txt" $run "$r" $args; then fail "runner ($m) failed"; fi
  checked=$((checked + 1))
  if [ $name != host ]; then
    want=$host/out-$m.txt
    if [ $plugin = no ]; then grep -v '^plugin: ' "$want" > "$out/want-$m.txt"; want=$out/want-$m.txt; fi
    if ! cmp -s "$want" "$out/out-$m.txt"; then
      fail "runner ($m) prints other than the host's:"; diff "$want" "$out/out-$m.txt" | head -20 >> "$log"
    fi
  fi
done

# the implementation as a shared object, unloaded under a live thread that used it
if [ $libload = yes ]; then
  lib=$out/libdispatch$so
  if $cc $cflags $soflags tests/structure/impl.c -o "$lib" $libs >> "$log" 2>&1 &&
     $cc $cflags $ldflags tests/cross/libload.c -o "$out/libload$exe" $libs >> "$log" 2>&1; then
    echo "== libload: $run $out/libload$exe $lib" >> "$log"
    # shellcheck disable=SC2086
    run_to "$out/libload.txt" $run "$out/libload$exe" "$lib" || fail "libload failed"
    checked=$((checked + 1))
    [ $name = host ] || cmp -s "$host/libload.txt" "$out/libload.txt" || fail "libload prints other than the host's"
  else fail "libload does not build"; fi
fi

# the documentation's examples (README.md, docs/*.md), extracted as tests/structure.sh does, compared with tests/readme_NAME.out
for ex in $(cat README.md docs/*.md | sed -n 's/^<!-- example:\([a-z_]*\) -->$/\1/p'); do
  d=$out/readme_$ex
  mkdir -p "$d"
  cat README.md docs/*.md | sed -n "/<!-- example:$ex -->/,/^\`\`\`\$/p" | sed '1,2d;$d' > "$d/example.c"
  if ! (cd "$d" && $cc $cflags $extra -I"$top" -I"$top/tests/plugin" -I"$top/gen" example.c -o example$exe $libs) >> "$log" 2>&1; then
    fail "README example $ex does not build"; continue
  fi
  # shellcheck disable=SC2086
  if ! (cd "$d" && run_to output.txt $run ./example$exe); then fail "README example $ex failed"; fi
  checked=$((checked + 1))
  if ! cmp -s "tests/readme_$ex.out" "$d/output.txt"; then
    fail "README example $ex prints other than README says:"; diff "tests/readme_$ex.out" "$d/output.txt" | head -10 >> "$log"
  fi
done

if [ $bad = 0 ] && [ $checked -gt 0 ]; then
  echo "  ok    $name: $checked programs ran ($cc${run:+, $run}), output identical to the host's"
  echo ok > "$out/verdict"
else
  echo "  FAIL  $name ($bad failures; log: $log)"
  sed 's/^/        /' "$log" | grep -v '^        $' | tail -30
  echo bad > "$out/verdict"
  exit 1
fi
