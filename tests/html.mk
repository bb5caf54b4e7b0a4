# tests/html.mk - dk_registry_html_to_string's page rendered by headless chromium
# (tests/html_render.sh), and the picture of minitensor's dispatch tables in
# docs/. Included from the top-level Makefile after minitensor.mk.

.PHONY: html-render docs-table

html-render: examples ## render minitensor's dispatch-table page in headless chromium (SKIP without chromium)
	@mkdir -p $(BUILD)/html
	@$(MT_OUT)/minitensor $(MT_OUT)/minitensor_plugin.so $(BUILD)/html/dispatch-table.html > /dev/null
	@sh tests/html_render.sh $(BUILD)/html/dispatch-table.html $(BUILD)/html $(BUILD)/results

docs-table: docs/dispatch-table.html ## docs/dispatch-table.html and its screenshot docs/dispatch-table.png (needs chromium)
	timeout 60 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=900,400 \
	  --screenshot=docs/dispatch-table.png "file://$(CURDIR)/docs/dispatch-table.html" 2> /dev/null
