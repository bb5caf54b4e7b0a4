# examples/docrender/docrender.mk - the worked example of custom key lists
# (dispatch.h's manual, >>config: "Custom key lists"), included by the
# Makefile.
#
#   example-docrender   gen/dkgen turns doc_ops.txt into $(BUILD)/examples/docrender/doc_ops.h;
#                       docrender.c is compiled with DK_CONFIG_HEADER="doc_keys.h"
#                       (C99 and C++), run, and its output compared with expected.txt;
#                       the rows the manual quotes are checked against doc_keys.h

DR_DIR := examples/docrender
DR_OUT  = $(BUILD)/examples/docrender

.PHONY: example-docrender
test: example-docrender

$(BUILD)/examples/docrender/doc_ops.h: $(DR_DIR)/doc_ops.txt $(BUILD)/dkgen
	@mkdir -p $(@D)
	$(BUILD)/dkgen $< $@

$(BUILD)/examples/docrender/docrender: $(DR_DIR)/docrender.c $(DR_DIR)/doc_keys.h $(BUILD)/examples/docrender/doc_ops.h dispatch.h
	$(CC) $(CFLAGS_T) $(EXTRA) -I$(DR_DIR) -I$(DR_OUT) '-DDK_CONFIG_HEADER="doc_keys.h"' $< -o $@ -lpthread

$(BUILD)/examples/docrender/docrender-cxx: $(DR_DIR)/docrender.c $(DR_DIR)/doc_keys.h $(BUILD)/examples/docrender/doc_ops.h dispatch.h
	$(CXX) -x c++ -std=c++11 $(WARN_CXX) -g -O1 -I. -I$(DR_DIR) -I$(DR_OUT) '-DDK_CONFIG_HEADER="doc_keys.h"' $< -o $@ -lpthread

example-docrender: $(BUILD)/examples/docrender/docrender $(BUILD)/examples/docrender/docrender-cxx ## the custom-key-lists example (a document renderer: Raster/Vector/Text, Cache, Accessibility, Logging, Profile), output compared with expected.txt
	@mkdir -p $(BUILD)/results; ok=0; bad=0; \
	missing=$$(grep -E '^ *(X\(|#define)' $(DR_DIR)/doc_keys.h | sed 's/^ *//' | \
	  while IFS= read -r l; do grep -qF -- "$$l" dispatch.h || echo "$$l"; done); \
	if [ -z "$$missing" ]; then ok=$$((ok+1)); echo "  ok    dispatch.h's Note [Custom key lists] quotes doc_keys.h's rows"; \
	else bad=$$((bad+1)); echo "  FAIL  Note [Custom key lists] lacks rows of doc_keys.h: $$missing"; fi; \
	for v in docrender docrender-cxx; do \
	  if $(DR_OUT)/$$v > $(DR_OUT)/$$v.txt 2>&1 && diff -u $(DR_DIR)/expected.txt $(DR_OUT)/$$v.txt; then \
	    ok=$$((ok+1)); echo "  ok    examples/docrender ($$v) output is expected.txt"; \
	  else bad=$$((bad+1)); echo "  FAIL  examples/docrender ($$v): output in $(DR_OUT)/$$v.txt"; fi; \
	done; echo "$$ok $$bad" > $(BUILD)/results/example-docrender.count; [ $$bad = 0 ]
