# bench/c10.mk - dispatch.h's bench beside the real c10 dispatcher; included
# by the top-level Makefile:
#     make bench-c10      build and run both benches (+ icounts), compare
#     make bench-chart    SVG bar chart of the comparison
#     make bench-readme   docs/bench.md's tables from that run (or make bench's)
#
# dispatch.h's side is built with the PyTorch 1.13.1 preset
# (-DDK_PRESET_TORCH_1_13_1: the key lists of the libtorch it is compared
# with), as $(BUILD)/bench-1.13.1.
#
# bench-c10 needs Debian's libtorch-dev (1.13.1): run as root it is installed
# with apt-get, otherwise the missing package is named. The instruction
# counts need valgrind (skipped without it, or with C10_ICOUNT=0); the c10
# one takes several minutes (libtorch's start-up under valgrind, twice per
# row), the timed benches about a minute each. bench-chart needs gnuplot-nox
# (same rule).

C10_CXXFLAGS     ?= -std=c++17 -O2 -DNDEBUG
C10_LDLIBS       ?= -ltorch_cpu -lc10 -lpthread
GNUPLOT          ?= gnuplot
C10_ICOUNT       ?= 1
C10_DOCS_CHART   ?= docs/bench-chart.svg
C10_README       ?= docs/bench.md

.PHONY: bench-c10 bench-chart bench-readme c10-gnuplot

c10-gnuplot:
	@$(call need,command -v $(GNUPLOT),gnuplot-nox)

$(BUILD)/bench_c10: bench/bench_c10.cpp bench/measure.h bench/clock.h | libtorch
	@mkdir -p $(BUILD)
	$(CXX) $(C10_CXXFLAGS) $< -o $@ $(C10_LDLIBS)

# dispatch.h's bench with the PyTorch 1.13.1 preset (make bench-icount uses it too)
$(BUILD)/bench-1.13.1: bench/bench.c bench/measure.h bench/clock.h dispatch.h gen/sample_ops.h | $(BUILD)
	$(CC) $(BENCH_CFLAGS) -DDK_PRESET_TORCH_1_13_1 $< -o $@ -lpthread

bench-c10: $(BUILD)/bench $(BUILD)/bench-1.13.1 $(BUILD)/bench-epochs $(BUILD)/bench_c10 ## dispatch.h (1.13.1 preset) beside the real c10 dispatcher (libtorch 1.13.1): Markdown table, every target, all from this run
	@if [ "$(C10_ICOUNT)" != 0 ] && command -v valgrind >/dev/null 2>&1; then \
	  $(bench_counts) && \
	  echo "instructions/op under callgrind: $(BUILD)/bench_c10 (several minutes: libtorch start-up)" && \
	  sh bench/icount.sh $(BUILD)/bench_c10 $(BUILD)/icount-c10 >/dev/null; \
	else [ "$(C10_ICOUNT)" = 0 ] || echo "missing Debian package: valgrind (instructions/op left out)"; \
	  rm -rf $(BUILD)/icount $(BUILD)/icount-1.13.1 $(BUILD)/icount-c10 $(BUILD)/shape; fi
	@sh bench/compare.sh $(BUILD)/bench-1.13.1 $(BUILD)/bench_c10 $(BUILD) \
	  $(BUILD)/icount-1.13.1/icount.txt $(BUILD)/icount-c10/icount.txt
	@echo; sh bench/report.sh $(BUILD) "make bench-c10"

$(BUILD)/compare.dat:
	@$(MAKE) --no-print-directory bench-c10

bench-chart: $(BUILD)/compare.dat | c10-gnuplot ## SVG bar chart of bench-c10 (ns/op, log scale) -> docs/bench-chart.svg
	$(GNUPLOT) -e "dat='$(BUILD)/compare.dat'; out='$(BUILD)/bench-chart.svg'" bench/chart.gp
	@mkdir -p $(dir $(C10_DOCS_CHART))
	cp -f $(BUILD)/bench-chart.svg $(C10_DOCS_CHART)
	@echo "wrote $(BUILD)/bench-chart.svg and $(C10_DOCS_CHART)"

bench-readme: ## docs/bench.md's tables and README's excerpt from the last make bench or make bench-c10 run (one run: every table)
	@sh bench/readme.sh $(C10_README) $(BUILD)
