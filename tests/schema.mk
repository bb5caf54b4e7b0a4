# tests/schema.mk - targets of the function-schema parser (>>schema in
# dispatch.h); included by the top-level Makefile (after tests/fuzz.mk).
#
#   schema-test     run build/test_schema (one of the unit tests): unit tests,
#                   and every schema of tests/conformance/schemas-1.13.1.txt
#                   parsed and printed back byte-identical with c10's
#                   dispatch bitset. (`make matrix` compiles the parser's
#                   fuzz harness with every compiler and standard.)
#   schema-vectors  regenerate tests/conformance/schemas-1.13.1.txt from the
#                   real libtorch 1.13.1 (installs libtorch-dev when run as root)
#   fuzz-short-schema  libFuzzer + ASan + UBSan on the parser (tests/fuzz_schema.c),
#   fuzz-schema        deterministic (make test) or exploratory (tests/fuzz.mk);
#                      fail on a crash, a leak or a round-trip violation

SCHEMA_GEN := $(BUILD)/gen_schemas

.PHONY: schema-test schema-vectors

schema-test: $(BUILD)/test_schema ## schema parser: unit tests and libtorch 1.13.1 conformance
	$(BUILD)/test_schema $(SCHEMA_VECTORS)

# --- conformance vectors from the real libtorch 1.13.1 --------------------------
$(SCHEMA_GEN): tests/conformance/gen_schemas.cpp tests/conformance/common.hpp | libtorch
	@mkdir -p $(dir $@)
	$(CXX) $(LIBTORCH_CXXFLAGS) -DLIBTORCH_DEB_VERSION='"$(LIBTORCH_DEB_VERSION)"' \
	  -o $@ $< -ltorch_cpu -lc10 -pthread

schema-vectors: $(SCHEMA_GEN) ## regenerate tests/conformance/schemas-1.13.1.txt (installs libtorch-dev)
	$(SCHEMA_GEN) $(SCHEMA_VECTORS).tmp
	mv -f $(SCHEMA_VECTORS).tmp $(SCHEMA_VECTORS)
	@echo "wrote $(SCHEMA_VECTORS) ($$(grep -vc '^#' $(SCHEMA_VECTORS)) schemas)"

# --- fuzzing (tests/fuzz.mk): make fuzz-short-schema, make fuzz-schema ---------------
FUZZ_CORPUS_schema := tests/fuzz/corpus
FUZZ_DICT_schema   := tests/fuzz/schema.dict
FUZZ_SEED_schema   := 1
FUZZ_RUNS_schema   := 700000
$(eval $(call fuzzer,schema))
