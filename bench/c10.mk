# bench/c10.mk - dispatch.h's bench beside the real c10 dispatcher.
#
# Standalone from the repo root, or included by the top-level Makefile:
#     make -f bench/c10.mk bench-c10      build and run both benches (+ icounts), compare
#     make -f bench/c10.mk bench-chart    SVG bar chart of the comparison
#
# bench-c10 needs Debian's libtorch-dev (1.13.1): run as root it is installed
# with apt-get, otherwise the missing package is named. The instruction
# counts need valgrind (skipped without it, or with C10_ICOUNT=0); the c10
# one takes a few minutes (libtorch's start-up under valgrind), the timed
# benches under a minute each. bench-chart needs gnuplot-nox (same rule).

C10_MK := $(lastword $(MAKEFILE_LIST))
C10_SAVED_GOAL := $(.DEFAULT_GOAL)

BUILD            ?= build
CC               ?= cc
CXX              ?= g++
BENCH_C10_CFLAGS ?= -std=gnu99 -O2 -DNDEBUG -I.
C10_CXXFLAGS     ?= -std=c++17 -O2 -DNDEBUG
C10_LDLIBS       ?= -ltorch_cpu -lc10 -lpthread
LIBTORCH_PACKAGE ?= libtorch-dev
C10_PROBE        ?= /usr/include/torch/library.h
GNUPLOT          ?= gnuplot
C10_ICOUNT       ?= 1
C10_DOCS_CHART   ?= docs/bench-chart.svg

.PHONY: bench-c10 bench-chart c10-libtorch c10-gnuplot

# install a Debian package as root, else name it: $(call c10_need,probe-test,package)
c10_need = if ! $(1); then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian package $(2)"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(2) >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(2) >/dev/null; } || \
	    { echo "could not install Debian package $(2)"; exit 1; }; \
	  else echo "missing Debian package: $(2) (run as root to install it, or: apt-get install $(2))"; exit 1; fi; fi

c10-libtorch:
	@$(call c10_need,[ -f $(C10_PROBE) ],$(LIBTORCH_PACKAGE))

c10-gnuplot:
	@$(call c10_need,command -v $(GNUPLOT) >/dev/null 2>&1,gnuplot-nox)

$(BUILD)/bench_c10: bench/bench_c10.cpp bench/measure.h | c10-libtorch
	@mkdir -p $(BUILD)
	$(CXX) $(C10_CXXFLAGS) $< -o $@ $(C10_LDLIBS)

bench-c10: $(BUILD)/bench_c10 ## dispatch.h's bench beside the real c10 dispatcher (libtorch 1.13.1): Markdown table
	@if [ ! -x $(BUILD)/bench ] || [ bench/bench.c -nt $(BUILD)/bench ] || [ dispatch.h -nt $(BUILD)/bench ]; then \
	  echo "$(CC) $(BENCH_C10_CFLAGS) bench/bench.c -o $(BUILD)/bench -lpthread"; \
	  mkdir -p $(BUILD) && $(CC) $(BENCH_C10_CFLAGS) bench/bench.c -o $(BUILD)/bench -lpthread; fi
	@if [ "$(C10_ICOUNT)" != 0 ] && command -v valgrind >/dev/null 2>&1; then \
	  echo "instructions/op under callgrind: $(BUILD)/bench"; \
	  sh bench/icount.sh $(BUILD)/bench $(BUILD)/icount >/dev/null && \
	  echo "instructions/op under callgrind: $(BUILD)/bench_c10 (a few minutes: libtorch start-up)" && \
	  VALGRIND_OPTS="--instr-atstart=no $$VALGRIND_OPTS" sh bench/icount.sh $(BUILD)/bench_c10 $(BUILD)/icount-c10 >/dev/null; \
	elif [ "$(C10_ICOUNT)" != 0 ]; then \
	  echo "missing Debian package: valgrind (instructions/op left out)"; \
	  rm -f $(BUILD)/icount/icount.txt $(BUILD)/icount-c10/icount.txt; fi
	@sh bench/compare.sh $(BUILD)/bench $(BUILD)/bench_c10 $(BUILD)

$(BUILD)/compare.dat:
	@$(MAKE) --no-print-directory -f $(C10_MK) bench-c10

bench-chart: $(BUILD)/compare.dat | c10-gnuplot ## SVG bar chart of bench-c10 (ns/op, log scale) -> docs/bench-chart.svg
	$(GNUPLOT) -e "dat='$(BUILD)/compare.dat'; out='$(BUILD)/bench-chart.svg'" bench/chart.gp
	@mkdir -p $(dir $(C10_DOCS_CHART))
	cp -f $(BUILD)/bench-chart.svg $(C10_DOCS_CHART)
	@echo "wrote $(BUILD)/bench-chart.svg and $(C10_DOCS_CHART)"

# including this file must not change the includer's default goal
.DEFAULT_GOAL := $(or $(C10_SAVED_GOAL),bench-c10)
