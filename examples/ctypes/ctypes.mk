# examples/ctypes/ctypes.mk - dispatch.h from Python through its C ABI,
# included by the Makefile.
#
#   example-ctypes   python3 examples/ctypes/example.py on $(BUILD)/libdispatch.so
#                    (`make lib`), output compared with expected.txt; skipped
#                    (and said so) without python3

.PHONY: example-ctypes
test: example-ctypes

example-ctypes: $(BUILD)/libdispatch.so ## Python (ctypes) defines an operator, registers a Python kernel and fallback, calls boxed, guards a layer per thread
	@mkdir -p $(BUILD)/examples/ctypes $(BUILD)/results; \
	if ! command -v python3 >/dev/null 2>&1; then echo "  SKIP  examples/ctypes: no python3"; exit 0; fi; \
	if python3 examples/ctypes/example.py $(BUILD)/libdispatch.so > $(BUILD)/examples/ctypes/output.txt 2>&1 && \
	   diff -u examples/ctypes/expected.txt $(BUILD)/examples/ctypes/output.txt; then \
	  echo "  ok    examples/ctypes output is expected.txt"; echo "1 0" > $(BUILD)/results/example-ctypes.count; \
	else echo "  FAIL  examples/ctypes (output in $(BUILD)/examples/ctypes/output.txt)"; \
	  echo "0 1" > $(BUILD)/results/example-ctypes.count; exit 1; fi
