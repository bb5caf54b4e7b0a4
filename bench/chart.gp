# bench/chart.gp - grouped bars of ns/op per case, dispatch.h vs the real c10
# dispatcher, from bench/compare.sh's compare.dat ("row" ours c10 per line).
#
#   gnuplot -e "dat='build/compare.dat'; out='build/bench-chart.svg'" bench/chart.gp
#
# Log scale: the cases span ~0.5 ns (an empty loop) to ~10 ms (registering a
# fallback with 10,000 operators). Memory and two-thread rows are not ns and
# are left out (compare.sh does not write them to compare.dat). The values
# are medians of one run on a shared machine: noisy (the instruction counts
# are in README's table).
if (!exists("dat")) dat = 'build/compare.dat'
if (!exists("out")) out = 'build/bench-chart.svg'

set terminal svg size 1400,660 dynamic noenhanced font 'sans,11' background rgb 'white'
set output out

set title 'dispatch.h (1.13.1 preset) vs c10 (libtorch 1.13.1): median ns per operation (ns/handle for teardown), log scale, lower is better'
set ylabel 'ns / op'
set logscale y 10
set format y '%g'
set yrange [0.1:*]
set grid ytics mytics lc rgb '#dddddd'
set key top left
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by 45 right scale 0 nomirror
set bmargin 8
set lmargin 10
set datafile missing 'NaN'

plot dat using 2:xtic(1) title 'dispatch.h (-DDK_PRESET_TORCH_1_13_1)' lc rgb '#2b6cb0', \
     ''  using 3         title 'c10 (libtorch 1.13.1)' lc rgb '#dd6b20'
