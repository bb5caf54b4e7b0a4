# dispatch.h — build, install, test and benchmark. `make help` lists the targets.
#
# `make` builds build/dkgen, build/libdispatch.so and build/libdispatch.a;
# `make install PREFIX=...` installs them with the header, a pkg-config file
# and a CMake package. `make test` works on a fresh Debian machine: run as
# root it installs what it needs with apt-get (see `deps`); otherwise it names
# the missing packages.
#
# Every variable the pieces share (compilers, flags, BUILD, packages) is set
# here, once; the files included at the end only add targets, and variables
# under their own prefix (GEN_, FUZZ_, SCHEMA_, C10_, MT_, PLUGIN_, ...).

.DEFAULT_GOAL := all

CC       ?= cc
CLANG    ?= clang
CXX      ?= g++
CLANGXX  ?= clang++
CMAKE    ?= cmake
PKGCONF  ?= pkgconf
BUILD    := build
WARN_CXX := -pedantic -Wall -Wextra -Werror -Wshadow
WARN     := $(WARN_CXX) -Wstrict-prototypes
CSTD     := -std=c99
# the debug checks are on in every test build (the manual's CONFIGURATION)
CFLAGS_T := $(CSTD) $(WARN) -g -O1 -I. -DDK_DEBUG_READS -DDK_DEBUG_THREADS
LIBS_T   := -lcmocka -lpthread
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
TSAN     := -fsanitize=thread
FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_SECONDS ?= 60
# ThreadSanitizer runs the single-threaded churn loops of test_reclaim shorter (its races in full)
TSAN_SCALE := -DCYCLES_IMPL=20000 -DCYCLES_DEF=5000 -DCHURN_CYCLES=20000

# The library (make all / install): CFLAGS and LDFLAGS are the user's.
CFLAGS   ?= -O2 -g
VERSION  := $(shell sed -n 's/^\#define DK_VERSION_STRING "\(.*\)"/\1/p' dispatch.h)
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
LIBDIR   ?= $(PREFIX)/lib

# libtorch 1.13.1 (Debian's libtorch-dev): conformance vectors and bench-c10 only.
LIBTORCH_PACKAGE := libtorch-dev
LIBTORCH_CXXFLAGS := -std=c++17 -O1 -pthread
LIBTORCH_DEB_VERSION = $(shell dpkg-query -W -f='$${Version}' $(LIBTORCH_PACKAGE) 2>/dev/null)

# Debian packages `make test` needs (libstb-dev: stb_image.h, the control
# of the implementation's compile cost in make bench), each as KIND:WHAT:PACKAGE: h = a header
# the C compiler finds, p = a program on PATH, f = a file that exists. libFuzzer's runtime is probed
# by linking a fuzzer (fuzz-runtime).
DEPS := h:cmocka.h:libcmocka-dev h:xxhash.h:libxxhash-dev p:$(CLANG):clang p:$(CXX):g++ \
        p:$(CMAKE):cmake p:$(PKGCONF):pkgconf p:python3:python3 \
        p:chromium:chromium h:stb/stb_image.h:libstb-dev

KEYSPACE_VECTORS := tests/conformance/keyspace-1.13.1.txt
TABLE_VECTORS    := tests/conformance/tables-1.13.1.txt
SCHEMA_VECTORS   := tests/conformance/schemas-1.13.1.txt

.PHONY: FORCE all lib install uninstall install-test help test deps fuzz-runtime libtorch unit sanitize tsan matrix \
        structure clean bench bench-full bench-deps bench-scale bench-icount examples-test gen check-gen

all: $(BUILD)/dkgen lib ## build build/dkgen, build/libdispatch.so and build/libdispatch.a

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk -F':.*## ' '{ printf "  %-22s %s\n", $$1, $$2 }'

test: deps ## install what is missing, then build and run every test, two groups at a time (unit, sanitizers, compile matrix, structure, plugins, examples, install, fuzz-short, cross)
	@$(MAKE) -j2 --output-sync=target --no-print-directory unit sanitize tsan matrix structure check-gen plugin-test \
	  examples-test gen-check gen-check-libtorch install-test fuzz-short fuzz-registry-short gen-fuzz-short test-cross
	@sh tests/summary.sh $(BUILD)/results

# $(call need,TEST,PACKAGES): when the shell command TEST fails, install the
# Debian PACKAGES with apt-get as root, otherwise name them and fail.
need = pkgs="$(strip $(2))"; if ! { $(1); } >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages: $$pkgs"; \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkgs; } >/dev/null || \
	    { echo "could not install Debian packages: $$pkgs"; exit 1; }; \
	  else echo "missing Debian packages: $$pkgs (as root: apt-get install $$pkgs)"; exit 1; fi; fi

deps: ## install missing Debian packages (as root) or say which are missing
	@missing=""; for d in $(DEPS); do kind=$${d%%:*}; what=$${d#*:}; what=$${what%:*}; \
	  case $$kind in h) printf '#include <%s>\n' "$$what" | $(CC) -E -x c - ;; f) test -e "$$what" ;; *) command -v "$$what" ;; esac \
	    >/dev/null 2>&1 || missing="$$missing $${d##*:}"; done; \
	$(call need,[ -z "$$missing" ],$$missing)
	@$(MAKE) --no-print-directory fuzz-runtime

# libFuzzer's runtime: link a trivial fuzzer; if that fails, the package is
# named after clang's major version (clang 14: libclang-rt-14-dev).
FUZZ_RUNTIME_PACKAGE = $$(v=$$($(CLANG) --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1); \
	  if [ -n "$$v" ]; then echo libclang-rt-$$v-dev; else echo clang; fi)
fuzz-runtime: | $(BUILD)
	@printf 'int LLVMFuzzerTestOneInput(const char *d, long n);\nint LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }\n' \
	  > $(BUILD)/fuzz-probe.c; \
	$(call need,$(CLANG) -fsanitize=fuzzer $(BUILD)/fuzz-probe.c -o $(BUILD)/fuzz-probe,$(FUZZ_RUNTIME_PACKAGE))

libtorch:
	@$(call need,printf '#include <c10/core/DispatchKeySet.h>\n' | $(CXX) -std=c++17 -E -x c++ -,$(LIBTORCH_PACKAGE))

$(BUILD):
	@mkdir -p $(BUILD)

# --- unit tests (cmocka) ------------------------------------------------------
# Every tests/test_NAME.c is a unit test, built as $(BUILD)/test_NAME; what a
# file needs beyond that it declares in its first lines, "/* make: variants=...
# tsan=... flags=... args=... */" (tests/README.md says what each word does).
# A test made of several units (test_config_mismatch) adds its own rule below.
# TEST_DECLS holds those words as NAME@WORD, read by one awk over every file.
TEST_NAMES := $(basename $(notdir $(wildcard tests/test_*.c)))
TEST_DECLS := $(shell awk 'FNR == 1 { n = FILENAME; sub(/.*\//, "", n); sub(/\.c$$/, "", n); head = 1 } \
  head && /^\/\* make: .* \*\/$$/ { s = $$0; sub(/^\/\* make: /, "", s); sub(/ \*\/$$/, "", s); \
    k = split(s, w, " "); for (i = 1; i <= k; i++) printf "%s@%s ", n, w[i]; next } { head = 0 }' tests/test_*.c)
comma := ,
# $(call test_decl,NAME,KEY): the values of KEY in NAME's declaration
test_decl = $(subst $(comma), ,$(patsubst $(1)@$(2)=%,%,$(filter $(1)@$(2)=%,$(TEST_DECLS))))
TEST_VARIANTS := epochs 2_11 1_13_1
VARIANT_FLAGS_epochs := -DDK_CALL_EPOCHS
VARIANT_FLAGS_2_11   := -DDK_PRESET_TORCH_2_11
VARIANT_FLAGS_1_13_1 := -DDK_PRESET_TORCH_1_13_1
$(foreach t,$(TEST_NAMES),\
  $(eval FLAGS_$(t) := $(patsubst $(t)@flags=%,%,$(filter $(t)@flags=%,$(TEST_DECLS))))\
  $(foreach b,$(t) $(addprefix $(t)_,$(call test_decl,$(t),variants)),\
    $(eval ARGS_$(b) := $(patsubst $(t)@args=%,%,$(filter $(t)@args=%,$(TEST_DECLS)))))\
  $(foreach v,$(call test_decl,$(t),variants),$(eval VARIANT_TESTS_$(v) += $(t)_$(v))))
# every binary `make unit` and `make sanitize` run, and the ones `make tsan` runs
UNIT_TESTS := $(strip $(foreach t,$(TEST_NAMES),$(t) $(addprefix $(t)_,$(call test_decl,$(t),variants))))
TSAN_TESTS := $(strip $(foreach t,$(TEST_NAMES),$(patsubst %_plain,%,$(addprefix $(t)_,$(call test_decl,$(t),tsan)))))
ifneq ($(words $(UNIT_TESTS)),$(words $(sort $(UNIT_TESTS))))
$(error a test variant has the name of another test: $(UNIT_TESTS))
endif
ifneq ($(filter-out $(UNIT_TESTS),$(TSAN_TESTS)),)
$(error tsan= names a binary that is not built: $(filter-out $(UNIT_TESTS),$(TSAN_TESTS)))
endif
ifneq ($(filter-out $(TEST_VARIANTS),$(foreach t,$(TEST_NAMES),$(call test_decl,$(t),variants))),)
$(error unknown test variant (not $(TEST_VARIANTS)): $(filter-out $(TEST_VARIANTS),$(foreach t,$(TEST_NAMES),$(call test_decl,$(t),variants))))
endif
ifneq ($(filter-out variants=% tsan=% flags=% args=%,$(foreach d,$(TEST_DECLS),$(word 2,$(subst @, ,$(d))))),)
$(error unknown word in a test's "/* make: */" line: $(filter-out variants=% tsan=% flags=% args=%,$(foreach d,$(TEST_DECLS),$(word 2,$(subst @, ,$(d))))))
endif

TEST_DEPS := dispatch.h $(wildcard tests/*.h gen/*.h)
$(BUILD)/test_%: tests/test_%.c $(TEST_DEPS) | $(BUILD)
	$(CC) $(CFLAGS_T) $(EXTRA) $(FLAGS_test_$*) $< -o $@ $(LIBS_T)
# the variants: the same source built again with the variant's macro
define test_variant_rule
$$(addprefix $$(BUILD)/,$$(VARIANT_TESTS_$(1))): $$(BUILD)/%_$(1): tests/%.c $$(TEST_DEPS) | $$(BUILD)
	$$(CC) $$(CFLAGS_T) $$(EXTRA) $$(VARIANT_FLAGS_$(1)) $$(FLAGS_$$*) $$< -o $$@ $$(LIBS_T)
endef
$(foreach v,$(TEST_VARIANTS),$(eval $(call test_variant_rule,$(v))))
# translation units compiled in different configurations: other key lists,
# DK_CALL_EPOCHS, another DK_EXPLAIN_MAX_ARGS; a calling unit with other lists
$(BUILD)/test_config_mismatch: tests/test_config_mismatch.c tests/config_mismatch_other.c tests/config_mismatch_settings.c \
                               tests/config_mismatch_caller.c tests/config_mismatch_block.c \
                               tests/custom_config.h dispatch.h | $(BUILD)
	$(CC) $(CFLAGS_T) $(EXTRA) -c tests/test_config_mismatch.c -o $@.o
	$(CC) $(CFLAGS_T) $(EXTRA) '-DDK_CONFIG_HEADER="custom_config.h"' -Itests -c tests/config_mismatch_other.c -o $@-other.o
	$(CC) $(CFLAGS_T) $(EXTRA) -DDK_CALL_EPOCHS -DOTHER_SETTING=epochs -c tests/config_mismatch_settings.c -o $@-epochs.o
	$(CC) $(CFLAGS_T) $(EXTRA) -DDK_EXPLAIN_MAX_ARGS=4 -DOTHER_SETTING=explain -c tests/config_mismatch_settings.c -o $@-explain.o
	$(CC) $(CFLAGS_T) $(EXTRA) '-DDK_CONFIG_HEADER="custom_config.h"' -Itests -c tests/config_mismatch_caller.c -o $@-caller.o
	@# a unit with other key lists that only calls does not link (Note [Configuration in a symbol name])
	@if $(CC) $(CFLAGS_T) $(EXTRA) $@.o $@-other.o $@-epochs.o $@-explain.o $@-caller.o -o $@-linked $(LIBS_T) -ldl \
	    2> $@-link.log; then echo "$@: a calling unit with other key lists linked"; exit 1; fi; \
	grep -q 'undefined reference to .dk__tls_c' $@-link.log && \
	! grep 'undefined reference' $@-link.log | grep -v 'dk__tls_c\|dk__trace_hook_c' || { cat $@-link.log; exit 1; }
	@# the same unit as a shared object, dlopen'ed by the test: in the program's configuration and in another
	$(CC) $(CFLAGS_T) $(EXTRA) -fPIC -shared tests/config_mismatch_caller.c -o $@-good.so
	$(CC) $(CFLAGS_T) $(EXTRA) '-DDK_CONFIG_HEADER="custom_config.h"' -Itests -fPIC -shared \
	  tests/config_mismatch_caller.c -o $@-bad.so
	@# ... and in this configuration with an older header's private ABI (DK__ABI_REVISION)
	$(CC) $(CFLAGS_T) $(EXTRA) -DDK__ABI_REVISION=0 -fPIC -shared tests/config_mismatch_caller.c -o $@-old.so
	@# a plugin that only registers (a library block), in this configuration and in another
	$(CC) $(CFLAGS_T) $(EXTRA) -fPIC -shared tests/config_mismatch_block.c -o $@-block-good.so
	$(CC) $(CFLAGS_T) $(EXTRA) -DDK_CALL_EPOCHS -fPIC -shared tests/config_mismatch_block.c -o $@-block-bad.so
	$(CC) $(CFLAGS_T) $(EXTRA) -rdynamic $@.o $@-other.o $@-epochs.o $@-explain.o -o $@ $(LIBS_T) -ldl

# $(1): log-name prefix, $(2): binary directory (and environment), $(3): tests
define run_tests
	@mkdir -p $(BUILD)/results
	@$(foreach t,$(3),echo "== $(1)$(t)"; \
	  CMOCKA_MESSAGE_OUTPUT=stdout $(2)$(t) $(ARGS_$(t)) > $(BUILD)/results/$(1)$(t).log 2>&1; \
	  echo $$? > $(BUILD)/results/$(1)$(t).rc; cat $(BUILD)/results/$(1)$(t).log;)
endef

# TESTS=NAMES (binaries or % patterns: TESTS=test_call%) narrows unit,
# sanitize and tsan to the binaries of their list that match
tests_only = $(if $(TESTS),$(or $(filter $(TESTS),$(1)),$(error TESTS=$(TESTS) matches none of: $(1))),$(1))

unit: $(addprefix $(BUILD)/,$(call tests_only,$(UNIT_TESTS))) ## build and run the cmocka unit tests (TESTS=test_x: only those)
	$(call run_tests,,$(BUILD)/,$(call tests_only,$(UNIT_TESTS)))

sanitize: | $(BUILD) ## run the unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (TESTS=test_x: only those)
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/san EXTRA="$(SAN)" LIBS_T="$(LIBS_T)" \
	  $(addprefix $(BUILD)/san/,$(call tests_only,$(UNIT_TESTS))) >/dev/null
	$(call run_tests,asan-,ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(BUILD)/san/,$(call tests_only,$(UNIT_TESTS)))

tsan: | $(BUILD) ## run the concurrency tests under ThreadSanitizer (TESTS=test_x: only those)
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan EXTRA="$(TSAN) $(TSAN_SCALE)" LIBS_T="$(LIBS_T)" \
	  $(addprefix $(BUILD)/tsan/,$(call tests_only,$(TSAN_TESTS))) >/dev/null
	$(call run_tests,tsan-,TSAN_OPTIONS=halt_on_error=1 $(BUILD)/tsan/,$(call tests_only,$(TSAN_TESTS)))

# --- compile matrix: the header as C99/C11 with gcc and clang, and as C++ -------
MATRIX := "$(CC) -std=c99 $(WARN)" "$(CC) -std=c11 $(WARN)" "$(CLANG) -std=c99 $(WARN)" \
          "$(CLANG) -std=c11 $(WARN) -DDK_SHARED" "$(CC) -std=c99 $(WARN) -O2 -DNDEBUG" \
          "$(CC) -std=c99 $(WARN) -DDK_PRESET_TORCH_1_13_1" "$(CC) -std=c99 $(WARN) -DDK_CALL_EPOCHS" \
          "$(CLANG) -std=c11 $(WARN) -DDK_PRESET_TORCH_2_11" \
          "$(CLANGXX) -x c++ -std=c++11 $(WARN_CXX) -DDK_CALL_EPOCHS" \
          "$(CXX) -x c++ -std=c++11 $(WARN_CXX)" "$(CXX) -x c++ -std=c++11 $(WARN_CXX) -O2 -DNDEBUG" \
          "$(CLANGXX) -x c++ -std=c++17 $(WARN_CXX) -DDK_SHARED"
# the header with its implementation alone, and under the schema fuzzer's harness
MATRIX_SOURCES := tests/compile_all.c tests/fuzz_schema.c
matrix: | $(BUILD) ## compile the header (implementation included) and the schema harness with every compiler and standard
	@mkdir -p $(BUILD)/results; ok=0; bad=0; \
	for c in $(MATRIX); do for f in $(MATRIX_SOURCES); do \
	  if $$c -I. -c $$f -o $(BUILD)/matrix.o 2> $(BUILD)/matrix.log; \
	  then ok=$$((ok+1)); echo "  ok    $$c  $$f"; \
	  else bad=$$((bad+1)); echo "  FAIL  $$c  $$f"; cat $(BUILD)/matrix.log; fi; \
	done; done; echo "$$ok $$bad" > $(BUILD)/results/matrix.count; [ $$bad = 0 ]

# --- structure: multi-include, DISPATCH_STATIC, exported symbols ---------------
structure: | $(BUILD) ## header twice in one unit; two DISPATCH_STATIC units linked; only dk_ symbols exported; reads only through the read primitive, every public reader tested; wrong-typed kernels and wrong calld arities do not compile; a missing implementation names itself at link
	@CLANG="$(CLANG)" CXX="$(CXX)" CLANGXX="$(CLANGXX)" sh tests/structure.sh "$(CC)" "$(CFLAGS_T)" $(BUILD)

# --- benchmarks ------------------------------------------------------------------
BENCH_CFLAGS := -std=gnu99 -O2 -DNDEBUG -Wall -Wextra -I.
$(BUILD)/bench: bench/bench.c bench/measure.h bench/clock.h dispatch.h gen/sample_ops.h | $(BUILD)
	$(CC) $(BENCH_CFLAGS) $< -o $@ -lpthread

$(BUILD)/bench-epochs: bench/bench.c bench/measure.h bench/clock.h dispatch.h gen/sample_ops.h | $(BUILD)
	$(CC) $(BENCH_CFLAGS) -DDK_CALL_EPOCHS $< -o $@ -lpthread

# registrations under churn, in each reclamation mode (bench/churn.c)
$(BUILD)/churn: bench/churn.c bench/clock.h dispatch.h | $(BUILD)
	$(CC) $(BENCH_CFLAGS) $< -o $@ -lpthread
$(BUILD)/churn-epochs: bench/churn.c bench/clock.h dispatch.h | $(BUILD)
	$(CC) $(BENCH_CFLAGS) -DDK_CALL_EPOCHS $< -o $@ -lpthread
# the epochs writer's cost, and the slowdown of another thread under call
# epochs over the same under the default mode (which issues no barrier: the
# machine's own share), with their targets
bench_churn = { $(BUILD)/churn 2>/dev/null; $(BUILD)/churn-epochs 2>/dev/null; } | tee $(BUILD)/churn.txt; \
	awk '/^default:/ { d = $$(NF-5) + 0 } /^call epochs:/ { e = $$(NF-5) + 0; w = $$4 + 0 } \
	  END { printf "  call epochs: writer %.2f us per impl+deregister (target <= 3: %s); another thread slowed %.2fx the default mode'"'"'s (target <= 1.2: %s)\n", \
	        w, w <= 3 ? "met" : "NOT met", e / d, e / d <= 1.2 ? "met" : "NOT met" }' $(BUILD)/churn.txt

# $(BUILD)/bench-1.13.1 (the PyTorch 1.13.1 preset) is built by bench/c10.mk's rule.
# BENCH_ICOUNT=0: the timed rows only (no callgrind counts, no call-path shapes).
BENCH_ICOUNT ?= 1
# this run's callgrind counts: every row of both presets (bench/icount.sh, with
# the rotate rows' cache misses), the call rows of the call-epochs build (its
# bracket over the default build's), and the call-path targets built as
# several units with $(CC) and $(CLANG) (bench/shape.sh)
BENCH_EPOCHS_ROWS := call_one_hop|site_one_hop|call_fallthrough|call_two_hops
bench_counts = if [ "$(BENCH_ICOUNT)" != 0 ] && command -v valgrind >/dev/null 2>&1; then \
	  echo "instructions/op under callgrind: $(BUILD)/bench, $(BUILD)/bench-1.13.1, $(BUILD)/bench-epochs, the call path in 10 units (minutes)"; \
	  sh bench/icount.sh $(BUILD)/bench $(BUILD)/icount >/dev/null && \
	  sh bench/icount.sh $(BUILD)/bench-1.13.1 $(BUILD)/icount-1.13.1 >/dev/null && \
	  sh bench/icount.sh $(BUILD)/bench-epochs $(BUILD)/icount-epochs '$(BENCH_EPOCHS_ROWS)' >/dev/null && \
	  sh bench/shape.sh $(BUILD)/shape "$(BENCH_CFLAGS)" $(CC) $(CLANG) >/dev/null; \
	else [ "$(BENCH_ICOUNT)" = 0 ] || echo "missing Debian package: valgrind (instructions/op left out)"; \
	  rm -rf $(BUILD)/icount $(BUILD)/icount-1.13.1 $(BUILD)/icount-epochs $(BUILD)/shape; fi
# make bench: the timed rows beside their controls and every time, ratio
# and byte target, about a minute with the build (xxhash alone needed);
# make bench-full: the same with the 10^6 scale run, callgrind's counts,
# the call-path shapes and the compile costs, then docs/bench.md and
# README's excerpt from that one run (minutes).
bench_timed = $(BUILD)/bench | tee $(BUILD)/bench.txt; \
	echo; $(BUILD)/bench --scale $(1) | tee -a $(BUILD)/bench.txt; \
	$(BUILD)/bench-epochs --calls; \
	echo; echo "registrations under churn, each reclamation mode (bench/churn.c):"; $(bench_churn)
bench: $(BUILD)/bench $(BUILD)/bench-epochs $(BUILD)/churn $(BUILD)/churn-epochs ## the timed rows (lookup, calls, fallthrough, two hops, boxed, rotate, threads, 10^5 operators defined) beside their controls, every time / ratio / byte target met or not met, then the compile costs beside stb_image.h and <stdio.h> (with valgrind, the include-only verdict in the compilers' instructions), from this run (about a minute and a half, build included; the call path's instruction counts: bench-full)
	@$(call bench_timed,100000)
	@echo; sh bench/targets.sh -k ns -n $(BUILD)/bench.txt \
	  -t "targets (this run; each time target a ratio to a control of the same run; instruction targets: make bench-full or make bench-icount):"
	@echo; echo "what dispatch.h costs to build, beside stb_image.h's implementation and <stdio.h> (bench/compile_cost.sh):"; \
	  CC="$(CC)" CLANG="$(CLANG)" CXX="$(CXX)" sh bench/compile_cost.sh $(BUILD)/compile-cost
$(BUILD)/bench $(BUILD)/bench-epochs $(BUILD)/churn $(BUILD)/churn-epochs: | bench-deps
# stb_image.h (the compile cost's control): installed as root; otherwise
# bench/compile_cost.sh says it did not measure
bench-deps:
	@$(call need,printf '#include <xxhash.h>\n' | $(CC) -E -x c -,libxxhash-dev)
	@[ "$$(id -u)" != 0 ] || { $(call need,printf '#include <stb/stb_image.h>\n' | $(CC) -E -x c -,libstb-dev); }

bench-full: deps $(BUILD)/bench $(BUILD)/bench-epochs $(BUILD)/bench-1.13.1 $(BUILD)/churn $(BUILD)/churn-epochs ## make bench's rows with 10^6 operators defined, the compile costs, callgrind's counts of both presets and the call-path shapes, every target; then docs/bench.md and README's excerpt from this run (about 4 minutes; BENCH_ICOUNT=0: no callgrind, under a minute)
	@$(call bench_timed,1000000)
	@echo; echo "what dispatch.h costs to build, beside stb_image.h's implementation and <stdio.h> (bench/compile_cost.sh):"; \
	  CC="$(CC)" CLANG="$(CLANG)" CXX="$(CXX)" sh bench/compile_cost.sh $(BUILD)/compile-cost
	@: > $(BUILD)/bench_c10-none.txt
	@echo; $(bench_counts)
	@echo; sh bench/report.sh $(BUILD) "make bench-full"
	@echo; sh bench/readme.sh $(C10_README) $(BUILD)

# 10^6 operators defined in one thread (make bench runs 10^5): user time,
# system time over the page-fault control's and peak RSS per operator
# against the targets (2.5 s, 1.25x and 3.5 GB for 10^6)
bench-scale: $(BUILD)/bench ## define 10^6 operators (def + CPU impl) in one thread, reclaiming every 1,000: user time, system time over its page-fault control, peak RSS, against the targets (seconds, 3.5 GB of memory)
	@$(BUILD)/bench --scale 1000000 | tee $(BUILD)/bench-scale.txt
	@echo; sh bench/targets.sh -k scale -n $(BUILD)/bench-scale.txt

bench-icount: $(BUILD)/bench $(BUILD)/bench-1.13.1 $(BUILD)/bench-epochs ## instructions per operation of each bench row under callgrind, both presets, the call rows with call epochs, and the targets met / not met
	@$(call need,command -v valgrind,valgrind)
	@echo "PyTorch 2.7.1 preset ($(BUILD)/bench):"
	@sh bench/icount.sh $(BUILD)/bench $(BUILD)/icount
	@echo; echo "PyTorch 1.13.1 preset ($(BUILD)/bench-1.13.1):"
	@sh bench/icount.sh $(BUILD)/bench-1.13.1 $(BUILD)/icount-1.13.1
	@echo; echo "the call rows with call epochs ($(BUILD)/bench-epochs, -DDK_CALL_EPOCHS):"
	@sh bench/icount.sh $(BUILD)/bench-epochs $(BUILD)/icount-epochs '$(BENCH_EPOCHS_ROWS)'
	@echo
	@sh bench/targets.sh -k instr -i $(BUILD)/icount/icount.txt -e $(BUILD)/icount-epochs/icount.txt \
	  -t "targets, PyTorch 2.7.1 preset (instructions/op: exact)"
	@echo
	@sh bench/targets.sh -k instr -i $(BUILD)/icount-1.13.1/icount.txt -t "targets, PyTorch 1.13.1 preset (instructions/op: exact)"
	@sh bench/targets.sh -m -k instr -i $(BUILD)/icount/icount.txt -e $(BUILD)/icount-epochs/icount.txt \
	  > $(BUILD)/targets-icount-2.7.1.md
	@sh bench/targets.sh -m -k instr -i $(BUILD)/icount-1.13.1/icount.txt > $(BUILD)/targets-icount-1.13.1.md

include bench/c10.mk
include tests/fuzz.mk
include tests/schema.mk
include tests/fuzz_registry.mk
include tests/conformance/conformance.mk
include gen/gen.mk
include examples/minitensor/minitensor.mk
include tests/plugin/plugin.mk
include tests/limits/limits.mk
include examples/ctypes/ctypes.mk
include examples/docrender/docrender.mk
include examples/plugin-host/plugin-host.mk
include tests/html.mk
test: html-render
include tests/timeline.mk
test: timeline-check
include tests/cross/cross.mk
include tests/exit/exit.mk
test: exit-test
DEPS += $(CROSS_DEPS)

examples-test: | $(BUILD) ## run examples/minitensor plain and under ASan+UBSan, comparing its output
	@mkdir -p $(BUILD)/results; ok=0; bad=0; \
	for v in "$(BUILD)|" "$(BUILD)/san|$(SAN)"; do \
	  if $(MAKE) --no-print-directory example-minitensor BUILD="$${v%%|*}" EXTRA="$${v#*|}" > $(BUILD)/examples.log 2>&1; \
	  then ok=$$((ok+1)); grep -E "ok|FAIL" $(BUILD)/examples.log; \
	  else bad=$$((bad+1)); cat $(BUILD)/examples.log; fi; \
	done; echo "$$ok $$bad" > $(BUILD)/results/examples.count; [ $$bad = 0 ]

# --- gen/: dkgen, typed bindings from schema files ---------------------------------
$(BUILD)/dkgen: gen/dkgen.c dispatch.h | $(BUILD)
	$(CC) $(CFLAGS_T) $< -o $@ -lpthread

# Headers dkgen generates, committed (schemas:header). The builds use the
# committed files and never rewrite them; `make gen` does, and check-gen (in
# make test) fails when one differs from what dkgen generates now.
GENERATED := gen/sample_ops.txt:gen/sample_ops.h examples/minitensor/mt_ops.txt:examples/minitensor/mt_ops.h

gen: $(BUILD)/dkgen ## run dkgen: gen/sample_ops.h, examples/minitensor/mt_ops.h and docs/keys.md's key table
	@for g in $(GENERATED); do echo "$(BUILD)/dkgen $${g%%:*} $${g#*:}"; $(BUILD)/dkgen $${g%%:*} $${g#*:} || exit 1; done
	@sh gen/readme_keys.sh $(BUILD)/dkgen docs/keys.md > $(BUILD)/keys.md.new && mv $(BUILD)/keys.md.new docs/keys.md

check-gen: $(BUILD)/dkgen | $(BUILD) ## regenerate the generated headers and docs/keys.md's key table; fail on any difference from the committed ones
	@mkdir -p $(BUILD)/check-gen $(BUILD)/results
	@sh gen/readme_keys.sh $(BUILD)/dkgen docs/keys.md > $(BUILD)/check-gen/keys.md
	@ok=0; bad=0; \
	for g in $(GENERATED) :docs/keys.md; do f=$${g#*:}; new=$(BUILD)/check-gen/$$(basename $$f); \
	  [ -z "$${g%%:*}" ] || $(BUILD)/dkgen $${g%%:*} $$new 2>/dev/null; \
	  if diff -u $$f $$new > $(BUILD)/check-gen/diff.txt; then ok=$$((ok+1)); echo "  ok    $$f is what dkgen generates"; \
	  else bad=$$((bad+1)); echo "  FAIL  $$f differs from what dkgen generates (make gen):"; head -20 $(BUILD)/check-gen/diff.txt; fi; \
	done; echo "$$ok $$bad" > $(BUILD)/results/check-gen.count; [ $$bad = 0 ]

# --- the library and its installation ------------------------------------------------
# pkg/libdispatch.c holds the implementation, compiled once for both libraries:
# position-independent, with -DDK_SHARED -fvisibility=hidden, so that the
# shared library exports the DK_API functions and variables and nothing else.
#
# A configuration (make lib / install / install-test CONFIG=NAME):
#   CONFIG          empty: the default one (PyTorch 2.7.1's lists, quiescent
#                   reclamation). Named: epochs, torch-1.13.1, torch-1.13.1-epochs;
#                   any other name with CONFIG_DEFINES and / or CONFIG_HEADER
#   CONFIG_DEFINES  its macros, NAME or NAME=VALUE, no quotes (DK_CALL_EPOCHS
#                   DK_EXPLAIN_MAX_ARGS=32)
#   CONFIG_HEADER   the path of its key-list header (DK_CONFIG_HEADER): make
#                   passes it without quotes (DK_CONFIG_HEADER_FILE) and installs
#                   it beside dispatch.h
# Everything is named after it: $(BUILD)/libdispatch-NAME.so / .a, pkg-config
# dispatch-NAME (header only) and dispatch-NAME-lib (the library), the CMake
# package dispatch-NAME; each carries the configuration's macros. A change of
# CFLAGS or of the configuration rebuilds the library (flags.txt holds them).
CONFIG ?=
CONFIG_DEFINES_epochs              := DK_CALL_EPOCHS
CONFIG_DEFINES_torch-1.13.1        := DK_PRESET_TORCH_1_13_1
CONFIG_DEFINES_torch-1.13.1-epochs := DK_PRESET_TORCH_1_13_1 DK_CALL_EPOCHS
CONFIG_DEFINES ?= $(CONFIG_DEFINES_$(CONFIG))
CONFIG_HEADER ?=
ifneq ($(CONFIG),)
ifeq ($(strip $(CONFIG_DEFINES)$(CONFIG_HEADER)),)
$(error CONFIG=$(CONFIG) is not a configuration of its own (epochs, torch-1.13.1, torch-1.13.1-epochs): give CONFIG_DEFINES and / or CONFIG_HEADER)
endif
endif
ifneq ($(findstring ",$(CONFIG_DEFINES))$(findstring ',$(CONFIG_DEFINES)),)
$(error CONFIG_DEFINES takes no quotes: for a key-list header use CONFIG_HEADER=path/to/keys.h)
endif
# what a consumer defines (the header installed beside dispatch.h: no -I)
CONFIG_MACROS := $(CONFIG_DEFINES) $(if $(CONFIG_HEADER),DK_CONFIG_HEADER_FILE=$(notdir $(CONFIG_HEADER)))
CONFIG_CPPFLAGS := $(addprefix -D,$(CONFIG_MACROS)) $(if $(CONFIG_HEADER),-I$(dir $(CONFIG_HEADER)))
LIBNAME  := dispatch$(if $(CONFIG),-$(CONFIG))
LIB_DIR  := $(BUILD)/lib$(if $(CONFIG),-$(CONFIG))

lib: $(BUILD)/lib$(LIBNAME).so $(BUILD)/lib$(LIBNAME).a ## build build/libdispatch.so and .a (CONFIG=NAME: build/libdispatch-NAME.so and .a in that configuration)

$(LIB_DIR)/flags.txt: FORCE | $(BUILD)
	@mkdir -p $(@D)
	@printf '%s\n' '$(subst ','\'',$(CC) $(CFLAGS) $(LDFLAGS) $(CONFIG_CPPFLAGS))' > $@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv $@.new $@; fi
$(LIB_DIR)/dispatch.o: pkg/libdispatch.c dispatch.h $(CONFIG_HEADER) $(LIB_DIR)/flags.txt | $(BUILD)
	$(CC) $(CSTD) $(WARN) -I. $(CFLAGS) $(CONFIG_CPPFLAGS) -DDK_SHARED -fPIC -fvisibility=hidden -c $< -o $@
$(BUILD)/lib$(LIBNAME).so: $(LIB_DIR)/dispatch.o
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,lib$(LIBNAME).so $< -o $@ -lpthread
$(BUILD)/lib$(LIBNAME).a: $(LIB_DIR)/dispatch.o
	rm -f $@; $(AR) rcs $@ $<

# Files generated for the install. Their paths are relative to where they
# are installed (pkg-config's ${pcfiledir}, CMake's CMAKE_CURRENT_LIST_DIR),
# so an installed tree can move; remade every time, since PREFIX may have
# changed.
rel = $(shell realpath -m --relative-to=$(1) $(2))
PKG_SPACE := $(PKG_NOTHING) $(PKG_NOTHING)
PKG_OUT := $(BUILD)/pkg$(if $(CONFIG),-$(CONFIG))
PKG_SED = -e 's|@VERSION@|$(VERSION)|g' -e 's|@NAME@|$(LIBNAME)|g' -e 's|@CONFIG@|$(if $(CONFIG),$(CONFIG),default)|g' \
    -e 's|@PC_PREFIX@|$(call rel,$(LIBDIR)/pkgconfig,$(PREFIX))|g' \
    -e 's|@PC_INCLUDEDIR@|$(call rel,$(LIBDIR)/pkgconfig,$(INCLUDEDIR))|g' \
    -e 's|@PC_LIBDIR@|$(call rel,$(LIBDIR)/pkgconfig,$(LIBDIR))|g' \
    -e 's|@PC_BINDIR@|$(call rel,$(LIBDIR)/pkgconfig,$(BINDIR))|g' \
    -e 's|@CM_INCLUDEDIR@|$(call rel,$(LIBDIR)/cmake/$(LIBNAME),$(INCLUDEDIR))|g' \
    -e 's|@CM_LIBDIR@|$(call rel,$(LIBDIR)/cmake/$(LIBNAME),$(LIBDIR))|g' \
    -e 's|@CM_BINDIR@|$(call rel,$(LIBDIR)/cmake/$(LIBNAME),$(BINDIR))|g' \
    -e 's|@PC_DEFINES@|$(strip $(addprefix -D,$(CONFIG_MACROS)))|g' \
    -e 's|@CM_DEFINES@|$(subst $(PKG_SPACE),;,$(strip $(CONFIG_MACROS)))|g' \
    -e 's|@MAJOR@|$(word 1,$(subst ., ,$(VERSION)))|g' -e 's|@MINOR@|$(word 2,$(subst ., ,$(VERSION)))|g'
PKG_FILES := $(PKG_OUT)/$(LIBNAME).pc $(PKG_OUT)/$(LIBNAME)-lib.pc $(PKG_OUT)/$(LIBNAME)Config.cmake \
             $(PKG_OUT)/$(LIBNAME)ConfigVersion.cmake
$(PKG_OUT)/$(LIBNAME).pc: pkg/dispatch.pc.in FORCE
$(PKG_OUT)/$(LIBNAME)-lib.pc: pkg/dispatch-lib.pc.in FORCE
$(PKG_OUT)/$(LIBNAME)Config.cmake: pkg/dispatchConfig.cmake.in FORCE
$(PKG_OUT)/$(LIBNAME)ConfigVersion.cmake: pkg/dispatchConfigVersion.cmake.in FORCE
$(PKG_FILES): | $(BUILD)
	@mkdir -p $(@D)
	sed $(PKG_SED) $< > $@
FORCE:

# dispatch.h and dkgen serve every configuration: uninstall removes them with
# the last one (when no dispatch*.pc is left)
INSTALLED := $(LIBDIR)/lib$(LIBNAME).so $(LIBDIR)/lib$(LIBNAME).a \
             $(LIBDIR)/pkgconfig/$(LIBNAME).pc $(LIBDIR)/pkgconfig/$(LIBNAME)-lib.pc \
             $(LIBDIR)/cmake/$(LIBNAME)/$(LIBNAME)Config.cmake $(LIBDIR)/cmake/$(LIBNAME)/$(LIBNAME)ConfigVersion.cmake \
             $(if $(CONFIG_HEADER),$(INCLUDEDIR)/$(notdir $(CONFIG_HEADER)))
install: $(BUILD)/dkgen lib $(PKG_FILES) ## install header, dkgen, the library, pkg-config and CMake files of the configuration (PREFIX=/usr/local, DESTDIR, CONFIG)
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/cmake/$(LIBNAME)
	install -m 644 dispatch.h $(if $(CONFIG_HEADER),$(CONFIG_HEADER)) $(DESTDIR)$(INCLUDEDIR)/
	install -m 755 $(BUILD)/dkgen $(DESTDIR)$(BINDIR)/dkgen
	install -m 755 $(BUILD)/lib$(LIBNAME).so $(DESTDIR)$(LIBDIR)/lib$(LIBNAME).so
	install -m 644 $(BUILD)/lib$(LIBNAME).a $(DESTDIR)$(LIBDIR)/lib$(LIBNAME).a
	install -m 644 $(PKG_OUT)/$(LIBNAME).pc $(PKG_OUT)/$(LIBNAME)-lib.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 644 $(PKG_OUT)/$(LIBNAME)Config.cmake $(PKG_OUT)/$(LIBNAME)ConfigVersion.cmake \
	  $(DESTDIR)$(LIBDIR)/cmake/$(LIBNAME)/

uninstall: ## remove what make install installed (same PREFIX, DESTDIR and CONFIG; dispatch.h and dkgen too)
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	@# the directories install made, each removed once it is empty (rmdir leaves a directory that is not)
	@rmdir $(DESTDIR)$(LIBDIR)/cmake/$(LIBNAME) $(DESTDIR)$(LIBDIR)/cmake 2>/dev/null || true
	@if ! ls $(DESTDIR)$(LIBDIR)/pkgconfig/dispatch*.pc >/dev/null 2>&1; then \
	  echo "rm -f $(DESTDIR)$(INCLUDEDIR)/dispatch.h $(DESTDIR)$(BINDIR)/dkgen"; \
	  rm -f $(DESTDIR)$(INCLUDEDIR)/dispatch.h $(DESTDIR)$(BINDIR)/dkgen; \
	  for d in $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR); do \
	    rmdir "$$d" 2>/dev/null || true; done; fi

# Installs into a prefix under $(BUILD), builds README's first example against
# it (pkg-config, CMake, libdispatch.so / .a), runs the installed dkgen, moves
# the prefix and builds again, installs a non-default configuration and
# builds consumers in it, uninstalls.
install-test: all | $(BUILD) ## install into a scratch prefix; consumers via pkg-config, CMake, libdispatch.so / .a, in the default and a non-default configuration; a moved prefix; uninstall leaves nothing
	@MAKE="$(MAKE)" CC="$(CC)" CMAKE="$(CMAKE)" PKGCONF="$(PKGCONF)" STRICT="$(CSTD) $(WARN) -g -O1" \
	  sh pkg/install_test.sh $(abspath $(BUILD))/install-test $(BUILD)/results

clean: ## remove build products
	rm -rf $(BUILD)
