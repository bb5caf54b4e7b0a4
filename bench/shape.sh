#!/bin/sh
# bench/shape.sh OUTDIR "CFLAGS" CC...: the call-path instruction targets in
# several surroundings. bench/bench.c is built with each compiler, with each
# preset (PyTorch 2.7.1, -DDK_PRESET_TORCH_1_13_1) and as two units: one that
# also redispatches the operator it calls (the bench as it is) and one that
# never does (-DBENCH_NO_REDISPATCH), where a compiler sees every call of the
# operator's slow path pass the same flag and may specialise it. Each build's
# call rows are counted under callgrind (bench/icount.sh) and each target
# marked met or not. Prints a Markdown table; writes OUTDIR/shape.md.
out=${1:-build/shape}
flags=${2:--std=gnu99 -O2 -DNDEBUG}
shift 2
rows='loop_baseline|table_index|fnptr_call|call_one_hop|site_fnptr|site_one_hop|call_fallthrough'
mkdir -p "$out"
{
echo "| compiler | preset | unit | loop (<= 20) | autograd keys (<= 20) | call site (<= 22) | keyset -> slot (<= 10) | |"
echo "|---|---|---|---:|---:|---:|---:|---|"
for cc in "$@"; do
  command -v "$cc" >/dev/null 2>&1 || { echo "| $cc | - | - | - | - | - | - | not installed |"; continue; }
  ver=$("$cc" --version | head -n 1 | sed 's/ *([^)]*)//g')
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
} | tee "$out/shape.md.tmp"
mv -f "$out/shape.md.tmp" "$out/shape.md"
