# tests/fuzz.mk - libFuzzer targets, the same three for every fuzzer; included
# by the top-level Makefile (which sets BUILD, CLANG, WARN, FUZZ_SAN and
# FUZZ_SECONDS) before the files that declare fuzzers (tests/schema.mk).
#
# A fuzzer NAME is the harness tests/fuzz_NAME.c and these variables, set
# before the line $(eval $(call fuzzer,NAME)):
#   FUZZ_CORPUS_NAME   committed seeds and regression inputs (a directory)
#   FUZZ_DICT_NAME     libFuzzer dictionary (optional)
#   FUZZ_SEED_NAME     seed of the deterministic run (default 1)
#   FUZZ_RUNS_NAME     executions of the deterministic run (default 500000)
#   FUZZ_MAX_LEN_NAME  longest input (default 4096)
#   FUZZ_DEPS_NAME     what the harness is rebuilt for (default dispatch.h)
# The call defines
#   $(BUILD)/fuzz_NAME  the harness: clang, libFuzzer + ASan + UBSan
#   fuzz-short-NAME     deterministic: the corpus replayed, then FUZZ_RUNS_NAME
#                       executions from FUZZ_SEED_NAME (address randomisation
#                       off, so the same inputs run every time); nothing is
#                       written outside $(BUILD)/fuzz-short/NAME; a failing
#                       input is left there as crash-*
#   fuzz-NAME           exploratory: a fresh random seed for FUZZ_SECONDS;
#                       new inputs are kept in $(BUILD)/fuzz/NAME/corpus for
#                       the next run, a failing one in $(BUILD)/fuzz/NAME/
# and makes `fuzz-short` (run by `make test`) and `fuzz` run them too.
# A failing input found by `make fuzz` goes into FUZZ_CORPUS_NAME as
# regress-<what>, beside a unit test of the fix.

FUZZ_FLAGS   ?= $(CSTD) $(WARN) -g -O1 $(FUZZ_SAN)
FUZZ_ARGS    ?=

.PHONY: fuzz fuzz-short
fuzz: ## explore: each fuzzer (fuzz-NAME: one) for FUZZ_SECONDS (default 60) from a fresh random seed; FUZZ_ARGS: more flags
fuzz-short: ## deterministic: each fuzzer (fuzz-short-NAME: one) replays its corpus, then fixed runs from a fixed seed (~20 s)

fuzz__comma := ,
fuzz__empty :=
fuzz__space := $(fuzz__empty) $(fuzz__empty)
# libFuzzer flags both runs share.
fuzz__common = -max_len=$(FUZZ_MAX_LEN_$(1)) $(if $(FUZZ_DICT_$(1)),-dict=$(FUZZ_DICT_$(1))) -print_final_stats=1
# The corpus as -seed_inputs in sorted order: the same first inputs on every machine.
fuzz__seeds = -seed_inputs=$(subst $(fuzz__space),$(fuzz__comma),$(sort $(wildcard $(FUZZ_CORPUS_$(1))/*)))

define fuzzer
FUZZ_SEED_$(1)    ?= 1
FUZZ_RUNS_$(1)    ?= 500000
FUZZ_MAX_LEN_$(1) ?= 4096
FUZZ_DEPS_$(1)    ?= dispatch.h
.PHONY: fuzz-$(1) fuzz-short-$(1)
fuzz: fuzz-$(1)
fuzz-short: fuzz-short-$(1)

$(BUILD)/fuzz_$(1): tests/fuzz_$(1).c $$(FUZZ_DEPS_$(1)) | fuzz-runtime
	@mkdir -p $$(dir $$@)
	$$(CLANG) $$(FUZZ_FLAGS) -I. $$< -o $$@

fuzz-$(1): $(BUILD)/fuzz_$(1)
	@mkdir -p $(BUILD)/fuzz/$(1)/corpus
	$(BUILD)/fuzz_$(1) -max_total_time=$$(FUZZ_SECONDS) $$(call fuzz__common,$(1)) \
	  -artifact_prefix=$(BUILD)/fuzz/$(1)/ $$(FUZZ_ARGS) $(BUILD)/fuzz/$(1)/corpus $$(FUZZ_CORPUS_$(1))

fuzz-short-$(1): $(BUILD)/fuzz_$(1)
	@rm -rf $(BUILD)/fuzz-short/$(1); mkdir -p $(BUILD)/fuzz-short/$(1) $(BUILD)/results; \
	norand="setarch $$$$(uname -m) -R"; $$$$norand true 2>/dev/null || norand=""; \
	set -- $(BUILD)/fuzz_$(1) -seed=$$(FUZZ_SEED_$(1)) -runs=$$(FUZZ_RUNS_$(1)) $$(call fuzz__common,$(1)) \
	  -artifact_prefix=$(BUILD)/fuzz-short/$(1)/ $$(call fuzz__seeds,$(1)); \
	echo "$$$$norand $$$$*" > $(BUILD)/fuzz-short/$(1)/log; \
	[ -n "$$$$norand" ] || echo "  note  fuzz-short-$(1): cannot turn address randomisation off; runs may differ in detail"; \
	$$$$norand "$$$$@" >> $(BUILD)/fuzz-short/$(1)/log 2>&1; rc=$$$$?; \
	grep -E "^Done [0-9]+ runs" $(BUILD)/fuzz-short/$(1)/log | tail -1; \
	if [ $$$$rc = 0 ]; then echo "1 0" > $(BUILD)/results/fuzz-$(1).count; \
	  echo "  ok    fuzz_$(1): corpus replayed, $$(FUZZ_RUNS_$(1)) runs from seed $$(FUZZ_SEED_$(1)), no failure"; \
	else echo "0 1" > $(BUILD)/results/fuzz-$(1).count; \
	  echo "  FAIL  fuzz_$(1) (log: $(BUILD)/fuzz-short/$(1)/log)"; tail -30 $(BUILD)/fuzz-short/$(1)/log; exit 1; fi
endef
