# conformance.mk - regenerate the c10 conformance vectors; included by the
# top-level Makefile: make conformance-vectors.
#
# Needs Debian's libtorch-dev (1.13.1), installed by the `libtorch` target
# when run as root. gen_keyspace links only libc10: the ATen guards used
# (LegacyTypeDispatch.h) are header-only wrappers around
# c10::impl::ExcludeDispatchKeyGuard.
#
# gen_tables (dispatch-table vectors) also needs libtorch_cpu.so: it defines
# operators and registers kernels/fallbacks through torch::Library, and the
# built-in backend fallbacks it records are registered by libtorch_cpu.
# gen_calls (end-to-end call vectors) links the same way: it replays
# gen_tables' registration combinations and makes real Dispatcher calls.
# gen_texts (message texts) links the same way; its stderr (c10's abort
# messages from the child processes that print bad keysets) is dropped.

CONFORMANCE_MK        := $(lastword $(MAKEFILE_LIST))
CONFORMANCE_DIR       := tests/conformance
CONFORMANCE_GEN       := $(BUILD)/gen_keyspace
CONFORMANCE_TABLES_GEN := $(BUILD)/gen_tables
CONFORMANCE_CALLS_GEN := $(BUILD)/gen_calls
CONFORMANCE_CALLS     := $(CONFORMANCE_DIR)/calls-1.13.1.txt
CONFORMANCE_TEXTS_GEN := $(BUILD)/gen_texts
CONFORMANCE_TEXTS     := $(CONFORMANCE_DIR)/texts-1.13.1.txt

.PHONY: conformance-vectors conformance-clean

conformance-vectors: $(CONFORMANCE_GEN) $(CONFORMANCE_TABLES_GEN) $(CONFORMANCE_CALLS_GEN) $(CONFORMANCE_TEXTS_GEN) ## regenerate tests/conformance/*.txt from the real libtorch 1.13.1 (installs libtorch-dev)
	$(CONFORMANCE_GEN) $(KEYSPACE_VECTORS).tmp
	mv -f $(KEYSPACE_VECTORS).tmp $(KEYSPACE_VECTORS)
	@echo "wrote $(KEYSPACE_VECTORS) ($$(wc -l < $(KEYSPACE_VECTORS)) lines)"
	$(CONFORMANCE_TABLES_GEN) $(TABLE_VECTORS).tmp
	mv -f $(TABLE_VECTORS).tmp $(TABLE_VECTORS)
	@echo "wrote $(TABLE_VECTORS) ($$(wc -l < $(TABLE_VECTORS)) lines)"
	$(CONFORMANCE_CALLS_GEN) $(CONFORMANCE_CALLS).tmp
	mv -f $(CONFORMANCE_CALLS).tmp $(CONFORMANCE_CALLS)
	@echo "wrote $(CONFORMANCE_CALLS) ($$(wc -l < $(CONFORMANCE_CALLS)) lines)"
	$(CONFORMANCE_TEXTS_GEN) $(CONFORMANCE_TEXTS).tmp 2>/dev/null
	mv -f $(CONFORMANCE_TEXTS).tmp $(CONFORMANCE_TEXTS)
	@echo "wrote $(CONFORMANCE_TEXTS) ($$(wc -l < $(CONFORMANCE_TEXTS)) lines)"

$(CONFORMANCE_GEN): $(CONFORMANCE_DIR)/gen_keyspace.cpp $(CONFORMANCE_DIR)/common.hpp $(CONFORMANCE_MK) | libtorch
	@mkdir -p $(dir $@)
	$(CXX) $(LIBTORCH_CXXFLAGS) \
	  -DLIBTORCH_DEB_VERSION='"$(LIBTORCH_DEB_VERSION)"' \
	  -o $@ $< -lc10 -pthread

$(CONFORMANCE_TABLES_GEN): $(CONFORMANCE_DIR)/gen_tables.cpp $(CONFORMANCE_DIR)/common.hpp $(CONFORMANCE_MK) | libtorch
	@mkdir -p $(dir $@)
	$(CXX) $(LIBTORCH_CXXFLAGS) \
	  -DLIBTORCH_DEB_VERSION='"$(LIBTORCH_DEB_VERSION)"' \
	  -o $@ $< -ltorch_cpu -lc10 -pthread

$(CONFORMANCE_CALLS_GEN): $(CONFORMANCE_DIR)/gen_calls.cpp $(CONFORMANCE_DIR)/common.hpp $(CONFORMANCE_MK) | libtorch
	@mkdir -p $(dir $@)
	$(CXX) $(LIBTORCH_CXXFLAGS) \
	  -DLIBTORCH_DEB_VERSION='"$(LIBTORCH_DEB_VERSION)"' \
	  -o $@ $< -ltorch_cpu -lc10 -pthread

$(CONFORMANCE_TEXTS_GEN): $(CONFORMANCE_DIR)/gen_texts.cpp $(CONFORMANCE_DIR)/common.hpp $(CONFORMANCE_MK) | libtorch
	@mkdir -p $(dir $@)
	$(CXX) $(LIBTORCH_CXXFLAGS) \
	  -DLIBTORCH_DEB_VERSION='"$(LIBTORCH_DEB_VERSION)"' \
	  -o $@ $< -ltorch_cpu -lc10 -pthread

conformance-clean:
	rm -f $(CONFORMANCE_GEN) $(CONFORMANCE_TABLES_GEN) $(CONFORMANCE_CALLS_GEN) $(CONFORMANCE_TEXTS_GEN)
