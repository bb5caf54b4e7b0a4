# conformance.mk - regenerate the c10 key-space conformance vectors.
#
# Included by the top-level Makefile; also usable standalone from the repo root:
#     make -f tests/conformance/conformance.mk            (= conformance-vectors)
#
# Needs Debian's libtorch-dev (1.13.1): headers in /usr/include/{c10,ATen,torch},
# libc10.so in the multiarch library directory. Only libc10 is linked: the
# ATen guards used (LegacyTypeDispatch.h) are header-only wrappers around
# c10::impl::ExcludeDispatchKeyGuard.
#
# gen_tables (dispatch-table vectors) also needs libtorch_cpu.so: it defines
# operators and registers kernels/fallbacks through torch::Library, and the
# built-in backend fallbacks it records are registered by libtorch_cpu.
# gen_calls (end-to-end call vectors) links the same way: it replays
# gen_tables' registration combinations and makes real Dispatcher calls.
# gen_texts (message texts) links the same way; its stderr (c10's abort
# messages from the child processes that print bad keysets) is dropped.

CONFORMANCE_MK := $(lastword $(MAKEFILE_LIST))
CONFORMANCE_SAVED_GOAL := $(.DEFAULT_GOAL)

CONFORMANCE_DIR       ?= tests/conformance
CONFORMANCE_BUILD_DIR ?= build
CONFORMANCE_GEN       ?= $(CONFORMANCE_BUILD_DIR)/gen_keyspace
CONFORMANCE_VECTORS   ?= $(CONFORMANCE_DIR)/keyspace-1.13.1.txt
LIBTORCH_PACKAGE      ?= libtorch-dev
LIBTORCH_PROBE        ?= /usr/include/c10/core/DispatchKeySet.h
CONFORMANCE_CXX       ?= g++
CONFORMANCE_CXXFLAGS  ?= -std=c++17 -O1 -pthread -I/usr/include
CONFORMANCE_LDLIBS    ?= -lc10 -pthread
CONFORMANCE_TABLES_GEN     ?= $(CONFORMANCE_BUILD_DIR)/gen_tables
CONFORMANCE_TABLES         ?= $(CONFORMANCE_DIR)/tables-1.13.1.txt
CONFORMANCE_TABLES_LDLIBS  ?= -ltorch_cpu -lc10 -pthread
CONFORMANCE_CALLS_GEN      ?= $(CONFORMANCE_BUILD_DIR)/gen_calls
CONFORMANCE_CALLS          ?= $(CONFORMANCE_DIR)/calls-1.13.1.txt
CONFORMANCE_CALLS_LDLIBS   ?= -ltorch_cpu -lc10 -pthread
CONFORMANCE_TEXTS_GEN      ?= $(CONFORMANCE_BUILD_DIR)/gen_texts
CONFORMANCE_TEXTS          ?= $(CONFORMANCE_DIR)/texts-1.13.1.txt
CONFORMANCE_TEXTS_LDLIBS   ?= -ltorch_cpu -lc10 -pthread
# Recorded in a comment line of the vectors only (evaluated at recipe time).
LIBTORCH_DEB_VERSION   = $(shell dpkg-query -W -f='$${Version}' $(LIBTORCH_PACKAGE) 2>/dev/null)

.PHONY: conformance-vectors conformance-libtorch conformance-clean

conformance-vectors: $(CONFORMANCE_GEN) $(CONFORMANCE_TABLES_GEN) $(CONFORMANCE_CALLS_GEN) $(CONFORMANCE_TEXTS_GEN)
	$(CONFORMANCE_GEN) $(CONFORMANCE_VECTORS).tmp
	mv -f $(CONFORMANCE_VECTORS).tmp $(CONFORMANCE_VECTORS)
	@echo "wrote $(CONFORMANCE_VECTORS) ($$(wc -l < $(CONFORMANCE_VECTORS)) lines)"
	$(CONFORMANCE_TABLES_GEN) $(CONFORMANCE_TABLES).tmp
	mv -f $(CONFORMANCE_TABLES).tmp $(CONFORMANCE_TABLES)
	@echo "wrote $(CONFORMANCE_TABLES) ($$(wc -l < $(CONFORMANCE_TABLES)) lines)"
	$(CONFORMANCE_CALLS_GEN) $(CONFORMANCE_CALLS).tmp
	mv -f $(CONFORMANCE_CALLS).tmp $(CONFORMANCE_CALLS)
	@echo "wrote $(CONFORMANCE_CALLS) ($$(wc -l < $(CONFORMANCE_CALLS)) lines)"
	$(CONFORMANCE_TEXTS_GEN) $(CONFORMANCE_TEXTS).tmp 2>/dev/null
	mv -f $(CONFORMANCE_TEXTS).tmp $(CONFORMANCE_TEXTS)
	@echo "wrote $(CONFORMANCE_TEXTS) ($$(wc -l < $(CONFORMANCE_TEXTS)) lines)"

$(CONFORMANCE_GEN): $(CONFORMANCE_DIR)/gen_keyspace.cpp $(CONFORMANCE_DIR)/common.hpp $(CONFORMANCE_MK) | conformance-libtorch
	@mkdir -p $(dir $@)
	$(CONFORMANCE_CXX) $(CONFORMANCE_CXXFLAGS) \
	  -DLIBTORCH_DEB_VERSION='"$(LIBTORCH_DEB_VERSION)"' \
	  -o $@ $< $(CONFORMANCE_LDLIBS)

$(CONFORMANCE_TABLES_GEN): $(CONFORMANCE_DIR)/gen_tables.cpp $(CONFORMANCE_DIR)/common.hpp $(CONFORMANCE_MK) | conformance-libtorch
	@mkdir -p $(dir $@)
	$(CONFORMANCE_CXX) $(CONFORMANCE_CXXFLAGS) \
	  -DLIBTORCH_DEB_VERSION='"$(LIBTORCH_DEB_VERSION)"' \
	  -o $@ $< $(CONFORMANCE_TABLES_LDLIBS)

$(CONFORMANCE_CALLS_GEN): $(CONFORMANCE_DIR)/gen_calls.cpp $(CONFORMANCE_DIR)/common.hpp $(CONFORMANCE_MK) | conformance-libtorch
	@mkdir -p $(dir $@)
	$(CONFORMANCE_CXX) $(CONFORMANCE_CXXFLAGS) \
	  -DLIBTORCH_DEB_VERSION='"$(LIBTORCH_DEB_VERSION)"' \
	  -o $@ $< $(CONFORMANCE_CALLS_LDLIBS)

$(CONFORMANCE_TEXTS_GEN): $(CONFORMANCE_DIR)/gen_texts.cpp $(CONFORMANCE_DIR)/common.hpp $(CONFORMANCE_MK) | conformance-libtorch
	@mkdir -p $(dir $@)
	$(CONFORMANCE_CXX) $(CONFORMANCE_CXXFLAGS) \
	  -DLIBTORCH_DEB_VERSION='"$(LIBTORCH_DEB_VERSION)"' \
	  -o $@ $< $(CONFORMANCE_TEXTS_LDLIBS)

# (a) make sure libtorch-dev is installed; install it when running as root.
conformance-libtorch:
	@if [ ! -f $(LIBTORCH_PROBE) ]; then \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "conformance-vectors: missing Debian package $(LIBTORCH_PACKAGE) ($(LIBTORCH_PROBE) not found); run: sudo apt-get install -y $(LIBTORCH_PACKAGE)" >&2; \
	    exit 1; \
	  fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y $(LIBTORCH_PACKAGE) || \
	    { apt-get update && apt-get install -y $(LIBTORCH_PACKAGE); } || exit 1; \
	  [ -f $(LIBTORCH_PROBE) ] || { echo "conformance-vectors: $(LIBTORCH_PACKAGE) installed but $(LIBTORCH_PROBE) still missing" >&2; exit 1; }; \
	fi

conformance-clean:
	rm -f $(CONFORMANCE_GEN) $(CONFORMANCE_TABLES_GEN) $(CONFORMANCE_CALLS_GEN) $(CONFORMANCE_TEXTS_GEN)

# Standalone use: default to conformance-vectors. When included, leave the
# including Makefile's default goal untouched.
ifeq ($(firstword $(MAKEFILE_LIST)),$(CONFORMANCE_MK))
.DEFAULT_GOAL := conformance-vectors
else
.DEFAULT_GOAL := $(CONFORMANCE_SAVED_GOAL)
endif
