# tests/fuzz_registry.mk - the registration-sequence fuzzer, tests/fuzz_registry.c
# (libFuzzer + AddressSanitizer + UndefinedBehaviorSanitizer, built with clang).
#
# Included by the top-level Makefile (which sets BUILD, CLANG, WARN, FUZZ_SAN
# and FUZZ_SECONDS, shared with `make fuzz`); `make test` runs
# fuzz-registry-short. Its own variables have a FUZZ_REGISTRY_ prefix.
#
#   fuzz-registry-short  deterministic (about 20 s of CPU time): replays every
#                        input of tests/fuzz/registry-corpus once, then fuzzes
#                        from that corpus with a fixed -seed and a fixed -runs
#                        into an emptied scratch directory, so every run
#                        executes the same inputs; fails on a crash, a leak or
#                        a violation (the input is kept in
#                        $(BUILD)/fuzz-registry/artifacts/). Writes
#                        $(BUILD)/results/fuzz-registry.count ("ok bad") and
#                        the log $(BUILD)/fuzz-registry-short.log.
#   fuzz-registry        exploratory: a fresh random seed, FUZZ_SECONDS long
#                        (default 60); new inputs are kept in
#                        $(BUILD)/fuzz-registry/corpus for the next run.
#   fuzz-registry-seeds  rewrites tests/fuzz/registry-corpus from the readable
#                        tests/fuzz/registry-seeds.txt (needs xxd).
#
# Replay one input with its decoded steps printed:
#     FUZZ_REGISTRY_TRACE=1 $(BUILD)/fuzz_registry <file>

# Without trace-cmp instrumentation: it tripled the time per execution, and the
# input's opcodes and operands are small numbers taken modulo, not magic values.
FUZZ_REGISTRY_FLAGS   ?= $(CSTD) $(WARN) -g -O1 $(FUZZ_SAN) -fno-sanitize-coverage=trace-cmp
FUZZ_REGISTRY_BIN     ?= $(BUILD)/fuzz_registry
FUZZ_REGISTRY_CORPUS  ?= tests/fuzz/registry-corpus
FUZZ_REGISTRY_SEEDS   ?= tests/fuzz/registry-seeds.txt
FUZZ_REGISTRY_DIR     ?= $(BUILD)/fuzz-registry
# the deterministic run: fixed seed and number of executions
FUZZ_REGISTRY_SEED    ?= 20240601
FUZZ_REGISTRY_RUNS    ?= 8000
FUZZ_REGISTRY_MAX_LEN ?= 256
FUZZ_REGISTRY_ARGS    ?=
FUZZ_REGISTRY_COMMON  := -max_len=$(FUZZ_REGISTRY_MAX_LEN) -len_control=0 -timeout=30 \
                         -artifact_prefix=$(FUZZ_REGISTRY_DIR)/artifacts/ -print_final_stats=1

.PHONY: fuzz-registry fuzz-registry-short fuzz-registry-seeds

$(FUZZ_REGISTRY_BIN): tests/fuzz_registry.c dispatch.h | fuzz-runtime
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_REGISTRY_FLAGS) -I. $< -o $@

fuzz-registry-short: $(FUZZ_REGISTRY_BIN) ## deterministic registration-sequence fuzzing: seed corpus, then fixed -seed / -runs (about 20 s of CPU)
	@mkdir -p $(BUILD)/results $(FUZZ_REGISTRY_DIR)/artifacts
	@rm -rf $(FUZZ_REGISTRY_DIR)/short && mkdir -p $(FUZZ_REGISTRY_DIR)/short
	@# libFuzzer orders seed inputs by size alone: equal sizes would make the order depend on the directory listing
	@dup=$$(wc -c $(FUZZ_REGISTRY_CORPUS)/* | grep -v ' total$$' | awk '{print $$1}' | sort -n | uniq -d); \
	if [ -n "$$dup" ]; then echo "0 1" > $(BUILD)/results/fuzz-registry.count; \
	  echo "  FAIL  $(FUZZ_REGISTRY_CORPUS) has inputs of equal size ($$dup bytes): not deterministic"; exit 1; fi
	@log=$(BUILD)/fuzz-registry-short.log; \
	{ $(FUZZ_REGISTRY_BIN) $(FUZZ_REGISTRY_COMMON) $(FUZZ_REGISTRY_CORPUS)/* && \
	  $(FUZZ_REGISTRY_BIN) $(FUZZ_REGISTRY_COMMON) -seed=$(FUZZ_REGISTRY_SEED) -runs=$(FUZZ_REGISTRY_RUNS) \
	    $(FUZZ_REGISTRY_ARGS) $(FUZZ_REGISTRY_DIR)/short $(FUZZ_REGISTRY_CORPUS); } > $$log 2>&1; rc=$$?; \
	grep -E "^Done [0-9]+ runs" $$log | tail -1; \
	if [ $$rc = 0 ]; then echo "1 0" > $(BUILD)/results/fuzz-registry.count; \
	  echo "  ok    registration fuzzing: $$(ls $(FUZZ_REGISTRY_CORPUS) | wc -l) seeds, then $(FUZZ_REGISTRY_RUNS) runs of -seed=$(FUZZ_REGISTRY_SEED), no violation"; \
	else echo "0 1" > $(BUILD)/results/fuzz-registry.count; \
	  echo "  FAIL  registration fuzzing (see $$log)"; tail -40 $$log; exit 1; fi

fuzz-registry: $(FUZZ_REGISTRY_BIN) ## exploratory registration-sequence fuzzing for FUZZ_SECONDS (default 60)
	@mkdir -p $(FUZZ_REGISTRY_DIR)/corpus $(FUZZ_REGISTRY_DIR)/artifacts
	$(FUZZ_REGISTRY_BIN) $(FUZZ_REGISTRY_COMMON) -max_total_time=$(FUZZ_SECONDS) $(FUZZ_REGISTRY_ARGS) \
	  $(FUZZ_REGISTRY_DIR)/corpus $(FUZZ_REGISTRY_CORPUS)

fuzz-registry-seeds: ## rewrite tests/fuzz/registry-corpus from tests/fuzz/registry-seeds.txt (xxd)
	@$(call need,command -v xxd,xxd)
	@rm -f $(FUZZ_REGISTRY_CORPUS)/s[0-9]*; mkdir -p $(FUZZ_REGISTRY_CORPUS)
	@grep -v '^#' $(FUZZ_REGISTRY_SEEDS) | grep ':' | while IFS=: read name hex; do \
	  echo "$$hex" | xxd -r -p > $(FUZZ_REGISTRY_CORPUS)/$$name; done
	@ls -l $(FUZZ_REGISTRY_CORPUS)
