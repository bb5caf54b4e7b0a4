# examples/minitensor/minitensor.mk — builds and runs the minitensor example.
#
# Included by the top-level Makefile (CC, BUILD, CFLAGS_T; `make gen`
# regenerates mt_ops.h, `make check-gen` checks it). Targets:
#     make examples              build the host program and the plugin
#     make example-minitensor    build, run, compare stdout with expected.txt
# Under the sanitizers (a separate build directory):
#     make example-minitensor BUILD=build/san EXTRA="$(SAN)"   (make examples-test)
#
# The dispatcher's implementation (dispatch_impl.c) is linked into the host
# only, with -rdynamic so that the plugin binds to the host's registry and
# functions; example-minitensor checks that the plugin defines no dk_ symbol.

MT_DIR    := examples/minitensor
MT_OUT     = $(BUILD)/examples/minitensor
MT_CFLAGS  = $(CFLAGS_T) -I$(MT_DIR)
MT_HOST_SRC := $(MT_DIR)/main.c $(MT_DIR)/minitensor.c $(MT_DIR)/dispatch_impl.c
MT_DEPS   := $(MT_DIR)/minitensor.h $(MT_DIR)/mt_ops.h dispatch.h

.PHONY: examples example-minitensor

examples: $(BUILD)/examples/minitensor/minitensor $(BUILD)/examples/minitensor/minitensor_plugin.so ## build the examples (minitensor and its plugin)

example-minitensor: examples ## build and run examples/minitensor, comparing its output with expected.txt
	@if nm -D --defined-only $(MT_OUT)/minitensor_plugin.so | grep -q ' dk_'; then \
	  echo "  FAIL  minitensor_plugin.so has its own copy of the dispatcher"; exit 1; fi
	@$(MT_OUT)/minitensor $(MT_OUT)/minitensor_plugin.so > $(MT_OUT)/output.txt; rc=$$?; \
	if [ $$rc = 0 ] && diff -u $(MT_DIR)/expected.txt $(MT_OUT)/output.txt; \
	then echo "  ok    examples/minitensor output is expected.txt"; \
	else echo "  FAIL  examples/minitensor (exit status $$rc; output in $(MT_OUT)/output.txt)"; exit 1; fi

# The host: runtime, demo and the dispatcher, exporting its symbols (-rdynamic).
$(BUILD)/examples/minitensor/minitensor: $(MT_HOST_SRC) $(MT_DEPS)
	@mkdir -p $(@D)
	$(CC) $(MT_CFLAGS) $(EXTRA) -rdynamic $(MT_HOST_SRC) -o $@ -ldl -lm -lpthread

# The plugin: kernels only; every dk_* and mt_* symbol it uses is the host's.
$(BUILD)/examples/minitensor/minitensor_plugin.so: $(MT_DIR)/plugin.c $(MT_DEPS)
	@mkdir -p $(@D)
	$(CC) $(MT_CFLAGS) $(EXTRA) -fPIC -shared $(MT_DIR)/plugin.c -o $@

# The picture of minitensor's dispatch tables (dk_registry_html_to_string), and its
# screenshot for README when chromium is installed.
docs/dispatch-table.html: examples
	$(MT_OUT)/minitensor $(MT_OUT)/minitensor_plugin.so $@ > /dev/null
