#!/bin/sh
# bench/shape.sh OUTDIR "CFLAGS" CC...: the call-path instruction targets in
# several surroundings. bench/bench.c is built with each compiler, with each
# preset (PyTorch 2.7.1, -DDK_PRESET_TORCH_1_13_1) and as two units: one that
# also redispatches the operator it calls (the bench as it is) and one that
# never does (-DBENCH_NO_REDISPATCH), where a compiler sees every call of the
# operator's slow path pass the same flag and may specialise it. Each build's
# call rows are counted under callgrind (bench/icount.sh) and each target
# marked met or not. Then each compiler's -DDK_CALL_EPOCHS build (2.7.1,
# redispatching unit): the call bracket's cost over the same rows of the
# default build. Last, gen/'s call site (the typed call of a dkgen binding,
# which reaches the dispatcher through dk_dispatch_kernel_with_fn and its
# own slow path, not DK_DECLARE_OP's macros) in each of those builds,
# against the counts kept below. Prints Markdown tables; writes
# OUTDIR/shape.md.
out=${1:-build/shape}
flags=${2:--std=gnu99 -O2 -DNDEBUG}
shift 2
version() { "$1" --version | head -n 1 | sed 's/ *([^)]*)//g'; }   # a compiler's first line, no parentheses
rows='loop_baseline|table_index|fnptr_call|call_one_hop|site_fnptr|site_one_hop|call_fallthrough|site_gen_call|site_gen_redispatch'
# gen's call site: site_gen_call and site_gen_redispatch (bench.c) over
# site_fnptr, per compiler, preset and unit, as last counted (gcc 12.2,
# clang 14.0). callgrind's counts are exact, so a limit is
# the count itself: one instruction more on gen's path is not met. "-": no
# such row (the never-redispatching unit has no redispatch). Each call count
# is DK_DECLARE_OP's call site's (site_one_hop) in the same build, or one
# less (gcc, call epochs): gen reads the entry as DK_DECLARE_OP does, its
# slow path is out of line and its call bracket DK_DECLARE_OP's. A compiler
# whose counts differ needs them looked at, then kept here.
gen_kept='gcc 2.7.1 redispatches 18 16
gcc 2.7.1 never 18 -
gcc 1.13.1 redispatches 20 15
gcc 1.13.1 never 20 -
gcc 2.7.1 epochs 25 22
clang 2.7.1 redispatches 18 15
clang 2.7.1 never 18 -
clang 1.13.1 redispatches 21 15
clang 1.13.1 never 21 -
clang 2.7.1 epochs 26 23'
mkdir -p "$out"
{
echo "| compiler | preset | unit | loop (<= 20) | autograd keys (<= 20) | call site (<= 22) | keyset -> slot (<= 10) | |"
echo "|---|---|---|---:|---:|---:|---:|---|"
for cc in "$@"; do
  command -v "$cc" >/dev/null 2>&1 || { echo "| $cc | - | - | - | - | - | - | not installed |"; continue; }
  ver=$(version "$cc")
  for preset in 2.7.1 1.13.1; do
    pf=; [ $preset = 1.13.1 ] && pf=-DDK_PRESET_TORCH_1_13_1
    for unit in redispatches never; do
      uf=; [ $unit = never ] && uf=-DBENCH_NO_REDISPATCH
      id=$(basename "$cc")-$preset-$unit
      # shellcheck disable=SC2086
      "$cc" $flags -I. $pf $uf bench/bench.c -o "$out/bench-$id" -lpthread ||
        { echo "| $ver | $preset | $unit | - | - | - | - | does not build |"; continue; }
      sh bench/icount.sh "$out/bench-$id" "$out/icount-$id" "$rows" >/dev/null
      awk -v cc="$ver" -v preset="$preset" -v unit="$unit" '
        $1 != "row" { v[$1] = $2 }
        function d(a, b, limit) { x = v[a] - v[b]; if (x > limit) bad = 1; return sprintf("%.1f", x) }
        END {
          l = d("call_one_hop", "fnptr_call", 20); f = d("call_fallthrough", "fnptr_call", 20)
          s = d("site_one_hop", "site_fnptr", 22); t = d("table_index", "loop_baseline", 10)
          printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", cc, preset, unit == "never" ? "never redispatches" : "redispatches too", l, f, s, t, bad ? "**not met**" : "met"
        }' "$out/icount-$id/icount.txt"
    done
  done
done
echo
echo "| compiler | call epochs bracket over the default build: one hop (<= 8) | call site (<= 8) | |"
echo "|---|---:|---:|---|"
for cc in "$@"; do
  command -v "$cc" >/dev/null 2>&1 || continue
  ver=$(version "$cc")
  id=$(basename "$cc")-2.7.1-redispatches
  # shellcheck disable=SC2086
  "$cc" $flags -I. -DDK_CALL_EPOCHS bench/bench.c -o "$out/bench-$id-epochs" -lpthread ||
    { echo "| $ver | - | - | does not build |"; continue; }
  sh bench/icount.sh "$out/bench-$id-epochs" "$out/icount-$id-epochs" 'call_one_hop|site_one_hop|site_fnptr|site_gen_call|site_gen_redispatch' >/dev/null
  awk -v cc="$ver" '
    FILENAME == ARGV[1] && $1 != "row" { d[$1] = $2; next }
    $1 != "row" { e[$1] = $2 }
    function x(r) { v = e[r] - d[r]; if (!(r in e) || !(r in d) || v > 8) bad = 1; return sprintf("+%.1f", v) }
    END { l = x("call_one_hop"); s = x("site_one_hop"); printf "| %s | %s | %s | %s |\n", cc, l, s, bad ? "**not met**" : "met" }
  ' "$out/icount-$id/icount.txt" "$out/icount-$id-epochs/icount.txt"
done
echo
echo "| compiler | preset | unit | gen call site over site_fnptr (kept) | gen redispatch site over site_fnptr (kept) | |"
echo "|---|---|---|---:|---:|---|"
for cc in "$@"; do
  command -v "$cc" >/dev/null 2>&1 || continue
  ver=$(version "$cc")
  family=gcc; echo "$ver" | grep -qi clang && family=clang
  for config in '2.7.1 redispatches' '2.7.1 never' '1.13.1 redispatches' '1.13.1 never' '2.7.1 epochs'; do
    preset=${config% *} unit=${config#* }
    id=$(basename "$cc")-$preset-$unit
    [ "$unit" = epochs ] && id=$(basename "$cc")-2.7.1-redispatches-epochs
    [ -f "$out/icount-$id/icount.txt" ] || { echo "| $ver | $preset | $unit | - | - | not counted |"; continue; }
    echo "$gen_kept" | awk -v fam="$family" -v preset="$preset" -v unit="$unit" -v cc="$ver" '
      FILENAME == "-" { if ($1 == fam && $2 == preset && $3 == unit) { kc = $4; kr = $5 } next }
      $1 != "row" { v[$1] = $2 }
      # row over site_fnptr against its kept count k ("-": the row must be absent)
      function x(r, k) {
        if (k == "") { bad = 1; nokept = 1 }
        if (!(r in v)) { if (k != "-") bad = 1; return "-" }
        d = v[r] - v["site_fnptr"]; if (k == "-" || k == "" || d > k + 1e-9) bad = 1
        return sprintf("%.1f (%s)", d, k == "" ? "none" : k)
      }
      END {
        c = x("site_gen_call", kc); r = x("site_gen_redispatch", kr)
        printf "| %s | %s | %s | %s | %s | %s |\n", cc, preset,
               unit == "never" ? "never redispatches" : unit == "epochs" ? "call epochs" : "redispatches too", c, r,
               nokept ? "**not met**: no count kept for this compiler" : bad ? "**not met**" : "met"
      }' - "$out/icount-$id/icount.txt"
  done
done
} | tee "$out/shape.md.tmp"
mv -f "$out/shape.md.tmp" "$out/shape.md"
