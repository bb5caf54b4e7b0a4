# examples/ctypes/ctypes.mk - dispatch.h from Python through its C ABI,
# included by the Makefile.
#
#   example-ctypes   python3 examples/ctypes/example.py (the binding
#                    dkbind.py beside it) on three builds of the library,
#                    each output compared with expected.txt: the default
#                    $(BUILD)/libdispatch.so, the call-epochs build a Python
#                    host loads ($(BUILD)/libdispatch-epochs.so), and that
#                    build under ASan+UBSan ($(BUILD)/san/), the interpreter
#                    started with the sanitizers' runtimes preloaded (as
#                    docs/threads-memory-plugins.md shows); skipped (and said
#                    so) without python3

.PHONY: example-ctypes
test: example-ctypes

CTYPES_PRELOAD = $$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libubsan.so)

example-ctypes: $(BUILD)/libdispatch.so ## Python (ctypes) binding: ops from schemas, Python kernels and a fallback, a failing kernel, lists, guards, two threads (default, epochs and ASan builds)
	@mkdir -p $(BUILD)/examples/ctypes $(BUILD)/results; \
	if ! command -v python3 >/dev/null 2>&1; then echo "  SKIP  examples/ctypes: no python3"; exit 0; fi; \
	$(MAKE) --no-print-directory lib CONFIG=epochs >/dev/null && \
	$(MAKE) --no-print-directory lib CONFIG=epochs BUILD=$(BUILD)/san CFLAGS="-O1 -g $(SAN)" >/dev/null || exit 1; \
	ok=0; bad=0; \
	for v in "default||$(BUILD)/libdispatch.so" "epochs||$(BUILD)/libdispatch-epochs.so" \
	         "epochs-asan|$(CTYPES_PRELOAD)|$(BUILD)/san/libdispatch-epochs.so"; do \
	  name=$${v%%|*}; rest=$${v#*|}; pre=$${rest%|*}; so=$${rest##*|}; out=$(BUILD)/examples/ctypes/output-$$name.txt; \
	  if LD_PRELOAD="$$pre" ASAN_OPTIONS=detect_leaks=0 python3 examples/ctypes/example.py $$so > $$out 2>&1 && \
	     diff -u examples/ctypes/expected.txt $$out; then \
	    ok=$$((ok+1)); echo "  ok    examples/ctypes ($$name) output is expected.txt"; \
	  else bad=$$((bad+1)); echo "  FAIL  examples/ctypes ($$name): output in $$out"; fi; \
	done; echo "$$ok $$bad" > $(BUILD)/results/example-ctypes.count; [ $$bad = 0 ]
