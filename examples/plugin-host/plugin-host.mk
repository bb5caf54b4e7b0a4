# examples/plugin-host/plugin-host.mk - the plugin-host recipe of
# docs/threads-memory-plugins.md, run exactly as written there (the lines
# between its plugin-host markers, with D set to this tree), in both
# reclamation modes; included by the Makefile.
#
#   example-plugin-host   output compared with examples/plugin-host/expected.txt

.PHONY: example-plugin-host
test: example-plugin-host

PH_DOC := docs/threads-memory-plugins.md
PH_DIR := examples/plugin-host

example-plugin-host: ## the documented plugin host recipe, built and run as written, both modes
	@mkdir -p $(BUILD)/results; ok=0; bad=0; root=$$(pwd); \
	for mode in default epochs; do out=$(BUILD)/examples/plugin-host/$$mode; rm -rf $$out; mkdir -p $$out; \
	  cp $(PH_DIR)/arr.h $(PH_DIR)/host.c $(PH_DIR)/npu.c $$out/; \
	  sed -n '/<!-- plugin-host:begin -->/,/<!-- plugin-host:end -->/p' $(PH_DOC) | sed '/^<!--/d; /^```/d' | \
	    sed "s|^D=.*|D='$$root'|" > $$out/recipe.sh; \
	  if [ $$mode = epochs ]; then sed -i 's/^cc -std=c99/cc -DDK_CALL_EPOCHS -std=c99/' $$out/recipe.sh; fi; \
	  if [ $$(grep -c '^cc ' $$out/recipe.sh) = 2 ] && (cd $$out && sh -e recipe.sh > output.txt 2>&1) && \
	     diff -u $(PH_DIR)/expected.txt $$out/output.txt; then \
	    ok=$$((ok+1)); echo "  ok    the documented plugin host ($$mode): output is expected.txt"; \
	  else bad=$$((bad+1)); echo "  FAIL  the documented plugin host ($$mode): see $$out"; cat $$out/recipe.sh $$out/output.txt 2>/dev/null; fi; \
	done; echo "$$ok $$bad" > $(BUILD)/results/example-plugin-host.count; [ $$bad = 0 ]
