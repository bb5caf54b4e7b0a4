# dispatch.h — build, test and benchmark. `make help` lists the targets.
#
# `make test` works on a fresh Debian machine: run as root it installs what it
# needs with apt-get (see `deps`); otherwise it names the missing package.

CC       ?= cc
CLANG    ?= clang
CXX      ?= g++
CLANGXX  ?= clang++
BUILD    := build
WARN     := -pedantic -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
CSTD     := -std=c99
CFLAGS_T := $(CSTD) $(WARN) -g -O1 -I.
LIBS_T   := -lcmocka -lpthread
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
TSAN     := -fsanitize=thread
# ThreadSanitizer runs the single-threaded churn loops of test_reclaim shorter (its races in full)
TSAN_SCALE := -DCYCLES_IMPL=20000 -DCYCLES_DEF=5000

# Debian packages the tests need: header or program -> package.
DEPS := /usr/include/cmocka.h:libcmocka-dev /usr/include/xxhash.h:libxxhash-dev \
        /usr/bin/clang:clang /usr/bin/g++:g++ \
        /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a:libclang-rt-14-dev
DEPS += $(CROSS_DEPS)

UNIT_TESTS := test_keyspace test_conformance test_custom_config test_config_mismatch \
              test_registry test_resolution_property test_table_conformance test_call test_threads \
              test_call_conformance test_schema test_gen test_keyset_bits test_keyset_bits_1_13_1 \
              test_guards test_races test_reclaim test_reclaim_epochs test_threads_epochs test_boxed
TSAN_TESTS := test_threads test_call test_races test_reclaim test_reclaim_epochs test_threads_epochs
KEYSPACE_VECTORS := tests/conformance/keyspace-1.13.1.txt
TABLE_VECTORS    := tests/conformance/tables-1.13.1.txt

.PHONY: help test deps unit sanitize tsan matrix structure clean conformance-vectors bench bench-icount examples-test \
        gen check-gen

help: ## list the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | \
	  awk -F':.*## ' '{ printf "  %-22s %s\n", $$1, $$2 }'

test: deps ## install what is missing, then build and run every test (unit, sanitizers, compile matrix, structure, plugins, examples, fuzz-short)
	@$(MAKE) --no-print-directory unit sanitize tsan matrix structure check-gen plugin-test examples-test gen-check gen-check-libtorch \
	  fuzz-short fuzz-registry-short gen-fuzz-short test-cross
	@sh tests/summary.sh $(BUILD)/results

deps: ## install missing Debian packages (as root) or say which are missing
	@missing=""; for d in $(DEPS); do f=$${d%%:*}; p=$${d##*:}; \
	  [ -e "$$f" ] || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing:$$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/dev/null || exit 1; \
	  else echo "missing Debian packages:$$missing (install them as root: apt-get install$$missing)"; exit 1; fi; \
	fi

$(BUILD):
	@mkdir -p $(BUILD)

# --- unit tests (cmocka) ------------------------------------------------------
# Per-test compile flags and command-line arguments.
FLAGS_test_conformance       := -DDK_PRESET_TORCH_1_13_1
FLAGS_test_table_conformance := -DDK_PRESET_TORCH_1_13_1
FLAGS_test_call_conformance  := -DDK_PRESET_TORCH_1_13_1
FLAGS_test_custom_config     := '-DDK_CONFIG_HEADER="custom_config.h"' -Itests
FLAGS_test_gen               := -Igen
ARGS_test_schema             := tests/conformance/schemas-1.13.1.txt
ARGS_test_conformance        := $(KEYSPACE_VECTORS)
ARGS_test_table_conformance  := $(TABLE_VECTORS)
ARGS_test_call_conformance   := tests/conformance/calls-1.13.1.txt $(TABLE_VECTORS)

$(BUILD)/test_%: tests/test_%.c dispatch.h tests/custom_config.h tests/vectors.h | $(BUILD)
	$(CC) $(CFLAGS_T) $(EXTRA) $(FLAGS_test_$*) $< -o $@ $(LIBS_T)
$(BUILD)/test_gen: gen/sample_ops.h
# the same tests in the call-epochs mode (DK_CALL_EPOCHS)
$(BUILD)/test_%_epochs: tests/test_%.c dispatch.h | $(BUILD)
	$(CC) $(CFLAGS_T) $(EXTRA) -DDK_CALL_EPOCHS $(FLAGS_test_$*) $< -o $@ $(LIBS_T)
# the same source built with the 1.13.1 preset
$(BUILD)/test_keyset_bits_1_13_1: tests/test_keyset_bits.c dispatch.h | $(BUILD)
	$(CC) $(CFLAGS_T) $(EXTRA) -DDK_PRESET_TORCH_1_13_1 $< -o $@ $(LIBS_T)
# two translation units compiled with different key lists
$(BUILD)/test_config_mismatch: tests/test_config_mismatch.c tests/config_mismatch_other.c tests/custom_config.h dispatch.h | $(BUILD)
	$(CC) $(CFLAGS_T) $(EXTRA) -c tests/test_config_mismatch.c -o $@.o
	$(CC) $(CFLAGS_T) $(EXTRA) '-DDK_CONFIG_HEADER="custom_config.h"' -Itests -c tests/config_mismatch_other.c -o $@-other.o
	$(CC) $(CFLAGS_T) $(EXTRA) $@.o $@-other.o -o $@ $(LIBS_T)

# $(1): log-name prefix, $(2): binary directory (and environment), $(3): tests
define run_tests
	@mkdir -p $(BUILD)/results
	@$(foreach t,$(3),echo "== $(1)$(t)"; \
	  CMOCKA_MESSAGE_OUTPUT=stdout $(2)$(t) $(ARGS_$(t)) > $(BUILD)/results/$(1)$(t).log 2>&1; \
	  echo $$? > $(BUILD)/results/$(1)$(t).rc; cat $(BUILD)/results/$(1)$(t).log;)
endef

unit: $(addprefix $(BUILD)/,$(UNIT_TESTS)) ## build and run the cmocka unit tests
	$(call run_tests,,$(BUILD)/,$(UNIT_TESTS))

sanitize: | $(BUILD) ## run the unit tests under AddressSanitizer + UndefinedBehaviorSanitizer
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/san EXTRA="$(SAN)" LIBS_T="$(LIBS_T)" \
	  $(addprefix $(BUILD)/san/,$(UNIT_TESTS)) >/dev/null
	$(call run_tests,asan-,ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(BUILD)/san/,$(UNIT_TESTS))

tsan: | $(BUILD) ## run the concurrency tests under ThreadSanitizer
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/tsan EXTRA="$(TSAN) $(TSAN_SCALE)" LIBS_T="$(LIBS_T)" \
	  $(addprefix $(BUILD)/tsan/,$(TSAN_TESTS)) >/dev/null
	$(call run_tests,tsan-,TSAN_OPTIONS=halt_on_error=1 $(BUILD)/tsan/,$(TSAN_TESTS))

# --- compile matrix: the header as C99/C11 with gcc and clang, and as C++ -------
MATRIX := "$(CC) -std=c99 $(WARN)" "$(CC) -std=c11 $(WARN)" "$(CLANG) -std=c99 $(WARN)" \
          "$(CLANG) -std=c11 $(WARN)" "$(CC) -std=c99 $(WARN) -O2 -DNDEBUG" \
          "$(CC) -std=c99 $(WARN) -DDK_PRESET_TORCH_1_13_1" "$(CC) -std=c99 $(WARN) -DDK_CALL_EPOCHS" \
          "$(CLANGXX) -x c++ -std=c++11 -pedantic -Wall -Wextra -Werror -Wshadow -DDK_CALL_EPOCHS" \
          "$(CXX) -x c++ -std=c++11 -pedantic -Wall -Wextra -Werror -Wshadow" \
          "$(CLANGXX) -x c++ -std=c++17 -pedantic -Wall -Wextra -Werror -Wshadow"
matrix: | $(BUILD) ## compile the header (implementation included) with every compiler and standard
	@mkdir -p $(BUILD)/results; ok=0; bad=0; \
	for c in $(MATRIX); do \
	  if $$c -I. -c tests/compile_all.c -o $(BUILD)/matrix.o 2> $(BUILD)/matrix.log; \
	  then ok=$$((ok+1)); echo "  ok    $$c"; \
	  else bad=$$((bad+1)); echo "  FAIL  $$c"; cat $(BUILD)/matrix.log; fi; \
	done; echo "$$ok $$bad" > $(BUILD)/results/matrix.count; [ $$bad = 0 ]

# --- structure: multi-include, DISPATCH_STATIC, exported symbols ---------------
structure: | $(BUILD) ## header twice in one unit; two DISPATCH_STATIC units linked; only dk_ symbols exported
	@sh tests/structure.sh "$(CC)" "$(CFLAGS_T)" $(BUILD)

# --- benchmarks ------------------------------------------------------------------
BENCH_CFLAGS := -std=gnu99 -O2 -DNDEBUG -Wall -Wextra -I.
$(BUILD)/bench: bench/bench.c bench/measure.h dispatch.h gen/sample_ops.h | $(BUILD)
	$(CC) $(BENCH_CFLAGS) $< -o $@ -lpthread

$(BUILD)/bench-epochs: bench/bench.c bench/measure.h dispatch.h gen/sample_ops.h | $(BUILD)
	$(CC) $(BENCH_CFLAGS) -DDK_CALL_EPOCHS $< -o $@ -lpthread

# $(BUILD)/bench-1.13.1 (the PyTorch 1.13.1 preset) is built by bench/c10.mk's rule.
bench: deps $(BUILD)/bench $(BUILD)/bench-epochs ## every row beside its baseline, then the targets met / not met (under a minute)
	@$(BUILD)/bench | tee $(BUILD)/bench-run.txt
	@$(BUILD)/bench-epochs --calls
	@echo
	@sh bench/targets.sh -n $(BUILD)/bench-run.txt \
	  -t "targets, PyTorch 2.7.1 preset (ns: noisy medians of this run; instructions: hardware counters if any, else make bench-icount)"

bench-icount: $(BUILD)/bench $(BUILD)/bench-1.13.1 ## instructions per operation of each bench row under callgrind, both presets, and the targets met / not met
	@command -v valgrind >/dev/null || { echo "missing Debian package: valgrind"; exit 1; }
	@echo "PyTorch 2.7.1 preset ($(BUILD)/bench):"
	@sh bench/icount.sh $(BUILD)/bench $(BUILD)/icount
	@echo; echo "PyTorch 1.13.1 preset ($(BUILD)/bench-1.13.1):"
	@sh bench/icount.sh $(BUILD)/bench-1.13.1 $(BUILD)/icount-1.13.1
	@echo
	@sh bench/targets.sh -k instr -i $(BUILD)/icount/icount.txt -t "targets, PyTorch 2.7.1 preset (instructions/op: exact)"
	@echo
	@sh bench/targets.sh -k instr -i $(BUILD)/icount-1.13.1/icount.txt -t "targets, PyTorch 1.13.1 preset (instructions/op: exact)"
	@for p in icount:2.7.1 icount-1.13.1:1.13.1; do \
	  sh bench/targets.sh -m -k instr -i $(BUILD)/$${p%%:*}/icount.txt > $(BUILD)/targets-icount-$${p#*:}.md; done

include bench/c10.mk
include tests/schema.mk
include tests/fuzz_registry.mk
include gen/gen.mk
include examples/minitensor/minitensor.mk
include tests/plugin/plugin.mk
include tests/cross/cross.mk

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
gen/sample_ops.h: gen/sample_ops.txt $(BUILD)/dkgen
	$(BUILD)/dkgen $< $@

gen: gen/sample_ops.h $(BUILD)/dkgen ## run dkgen: gen/sample_ops.h and README's key table
	@sh gen/readme_keys.sh $(BUILD)/dkgen README.md > $(BUILD)/README.md.new && mv $(BUILD)/README.md.new README.md

check-gen: $(BUILD)/dkgen | $(BUILD) ## regenerate gen/ outputs and README's key table; fail on any difference from the committed ones
	@mkdir -p $(BUILD)/check-gen $(BUILD)/results
	@$(BUILD)/dkgen gen/sample_ops.txt $(BUILD)/check-gen/sample_ops.h 2>/dev/null
	@sh gen/readme_keys.sh $(BUILD)/dkgen README.md > $(BUILD)/check-gen/README.md
	@ok=0; bad=0; \
	for f in gen/sample_ops.h README.md; do \
	  if diff -u $$f $(BUILD)/check-gen/$$(basename $$f) > $(BUILD)/check-gen/diff.txt; then ok=$$((ok+1)); echo "  ok    $$f is what dkgen generates"; \
	  else bad=$$((bad+1)); echo "  FAIL  $$f differs from what dkgen generates (make gen):"; head -20 $(BUILD)/check-gen/diff.txt; fi; \
	done; echo "$$ok $$bad" > $(BUILD)/results/check-gen.count; [ $$bad = 0 ]

conformance-vectors: ## regenerate tests/conformance/*.txt from the real libtorch 1.13.1 (installs libtorch-dev)
	@$(MAKE) --no-print-directory -f tests/conformance/conformance.mk conformance-vectors

clean: ## remove build products
	rm -rf $(BUILD)
