# tests/schema.mk - targets of the function-schema parser (>>schema in
# dispatch.h); included by the top-level Makefile, or standalone:
# make -f tests/schema.mk <target>.
#
#   schema-test     build and run tests/test_schema.c: unit tests, and every
#                   schema of tests/conformance/schemas-1.13.1.txt parsed and
#                   printed back byte-identical with c10's dispatch bitset
#   schema-matrix   compile the header with the parser as C99/C11 (gcc, clang)
#                   and C++ (g++, clang++)
#   schema-vectors  regenerate tests/conformance/schemas-1.13.1.txt from the
#                   real libtorch 1.13.1 (installs libtorch-dev when run as root)
#   fuzz-short-schema  libFuzzer + ASan + UBSan on the parser (tests/fuzz_schema.c),
#   fuzz-schema        deterministic (make test) or exploratory (tests/fuzz.mk);
#                      fail on a crash, a leak or a round-trip violation

SCHEMA_MK := $(lastword $(MAKEFILE_LIST))
SCHEMA_SAVED_GOAL := $(.DEFAULT_GOAL)

BUILD   ?= build
CC      ?= cc
CXX     ?= g++
CLANG   ?= clang
CLANGXX ?= clang++
WARN    ?= -pedantic -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes

SCHEMA_CFLAGS   ?= -std=c99 $(WARN) -g -O1
SCHEMA_VECTORS  ?= tests/conformance/schemas-1.13.1.txt
SCHEMA_GEN      ?= $(BUILD)/gen_schemas
SCHEMA_CXXFLAGS ?= -std=c++17 -O1 -pthread -I/usr/include
SCHEMA_LDLIBS   ?= -ltorch_cpu -lc10 -pthread
LIBTORCH_PACKAGE ?= libtorch-dev
SCHEMA_LIBTORCH_PROBE ?= /usr/include/ATen/core/dispatch/Dispatcher.h

# The top-level Makefile's run_tests passes ARGS_<test> to a unit test.
ARGS_test_schema := $(SCHEMA_VECTORS)

SCHEMA_INC := .
SCHEMA_HDR := dispatch.h

.PHONY: schema-test schema-matrix schema-vectors schema-libtorch

$(BUILD)/schema/test_schema: tests/test_schema.c $(SCHEMA_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(SCHEMA_CFLAGS) $(EXTRA) -I$(SCHEMA_INC) $< -o $@ -lcmocka -lpthread

schema-test: $(BUILD)/schema/test_schema ## schema parser: unit tests and libtorch 1.13.1 conformance
	$(BUILD)/schema/test_schema $(SCHEMA_VECTORS)

SCHEMA_MATRIX := "$(CC) -std=c99 $(WARN)" "$(CC) -std=c11 $(WARN)" "$(CLANG) -std=c99 $(WARN)" \
                 "$(CLANG) -std=c11 $(WARN)" "$(CC) -std=c99 $(WARN) -O2 -DNDEBUG" \
                 "$(CXX) -x c++ -std=c++11 -pedantic -Wall -Wextra -Werror -Wshadow" \
                 "$(CLANGXX) -x c++ -std=c++17 -pedantic -Wall -Wextra -Werror -Wshadow"
schema-matrix: $(SCHEMA_HDR) ## schema parser: compile as C99/C11 with gcc and clang, and as C++
	@mkdir -p $(BUILD)/schema; bad=0; \
	for c in $(SCHEMA_MATRIX); do \
	  if $$c -I$(SCHEMA_INC) -c tests/fuzz_schema.c -o $(BUILD)/schema/matrix.o 2> $(BUILD)/schema/matrix.log; \
	  then echo "  ok    $$c"; else bad=1; echo "  FAIL  $$c"; cat $(BUILD)/schema/matrix.log; fi; \
	done; [ $$bad = 0 ]

# --- conformance vectors from the real libtorch 1.13.1 --------------------------
$(SCHEMA_GEN): tests/conformance/gen_schemas.cpp tests/conformance/common.hpp | schema-libtorch
	@mkdir -p $(dir $@)
	$(CXX) $(SCHEMA_CXXFLAGS) \
	  -DLIBTORCH_DEB_VERSION='"$(shell dpkg-query -W -f='$${Version}' $(LIBTORCH_PACKAGE) 2>/dev/null)"' \
	  -o $@ $< $(SCHEMA_LDLIBS)

schema-vectors: $(SCHEMA_GEN) ## regenerate tests/conformance/schemas-1.13.1.txt (installs libtorch-dev)
	$(SCHEMA_GEN) $(SCHEMA_VECTORS).tmp
	mv -f $(SCHEMA_VECTORS).tmp $(SCHEMA_VECTORS)
	@echo "wrote $(SCHEMA_VECTORS) ($$(grep -vc '^#' $(SCHEMA_VECTORS)) schemas)"

schema-libtorch:
	@if [ ! -f $(SCHEMA_LIBTORCH_PROBE) ]; then \
	  if [ "$$(id -u)" -ne 0 ]; then \
	    echo "schema-vectors: missing Debian package $(LIBTORCH_PACKAGE); run: sudo apt-get install -y $(LIBTORCH_PACKAGE)" >&2; \
	    exit 1; \
	  fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y $(LIBTORCH_PACKAGE) || { apt-get update && apt-get install -y $(LIBTORCH_PACKAGE); } || exit 1; \
	fi

# --- fuzzing (tests/fuzz.mk): make fuzz-short-schema, make fuzz-schema ---------------
include $(dir $(SCHEMA_MK))fuzz.mk
FUZZ_CORPUS_schema := tests/fuzz/corpus
FUZZ_DICT_schema   := tests/fuzz/schema.dict
FUZZ_SEED_schema   := 1
FUZZ_RUNS_schema   := 700000
$(eval $(call fuzzer,schema))

ifeq ($(firstword $(MAKEFILE_LIST)),$(SCHEMA_MK))
.DEFAULT_GOAL := schema-test
else
.DEFAULT_GOAL := $(SCHEMA_SAVED_GOAL)
endif
