# tests/timeline.mk - the timeline of dispatches (dk_timeline_*): the
# recordings of test_timeline and of examples/minitensor loaded with
# Python's json module and checked (tests/timeline_check.py: nesting,
# names, durations not negative, and what each recording must hold), and
# the picture in docs/ (tools/timeline_svg.py). Included from the
# top-level Makefile after minitensor.mk.

.PHONY: timeline-check docs-timeline

TL_OUT = $(BUILD)/timeline
# $(call tl_check,LABEL,TIMELINE,EXPECT): the check's lines, counted into $(TL_OUT)/LABEL.count
tl_check = python3 tests/timeline_check.py $(2) $(3) > $(TL_OUT)/$(1).log 2>&1; rc=$$?; cat $(TL_OUT)/$(1).log; \
	ok=$$(grep -c '^  ok' $(TL_OUT)/$(1).log); bad=$$(grep -c '^  FAIL' $(TL_OUT)/$(1).log); \
	if [ $$rc != 0 ] && [ $$bad = 0 ]; then bad=1; echo "  FAIL  $(2): timeline_check.py exited $$rc"; fi; \
	echo "$$ok $$bad" > $(BUILD)/results/timeline-$(1).count

timeline-check: $(BUILD)/test_timeline examples ## the timelines test_timeline and examples/minitensor write, loaded with Python's json module: nesting, names, durations, what each must hold; and their picture
	@mkdir -p $(TL_OUT) $(BUILD)/results
	@rm -f $(TL_OUT)/test.json $(TL_OUT)/minitensor.json
	@CMOCKA_MESSAGE_OUTPUT=stdout $(BUILD)/test_timeline $(TL_OUT)/test.json > $(TL_OUT)/test.log 2>&1 || cat $(TL_OUT)/test.log
	@echo "== timeline of test_timeline"; \
	$(call tl_check,test,$(TL_OUT)/test.json,$(TL_OUT)/test.json.expect.json)
	@$(MT_OUT)/minitensor $(MT_OUT)/minitensor_plugin.so $(TL_OUT)/tables.html $(TL_OUT)/minitensor.json > /dev/null
	@echo "== timeline of examples/minitensor (part 4)"; \
	$(call tl_check,minitensor,$(TL_OUT)/minitensor.json,tests/timeline-minitensor.expect.json)
	@python3 tools/timeline_svg.py $(TL_OUT)/minitensor.json $(TL_OUT)/minitensor.svg && \
	  python3 -c "import sys, xml.etree.ElementTree as E; t = E.parse(sys.argv[1]); \
	    n = sum(1 for r in t.iter('{http://www.w3.org/2000/svg}rect')); sys.exit(0 if n >= 21 else 1)" $(TL_OUT)/minitensor.svg; \
	  if [ $$? = 0 ]; then echo "  ok    tools/timeline_svg.py draws minitensor's timeline (an SVG with a box per call)"; echo "1 0"; \
	  else echo "  FAIL  tools/timeline_svg.py on minitensor's timeline"; echo "0 1"; fi > $(TL_OUT)/svg.log; \
	  head -n 1 $(TL_OUT)/svg.log; tail -n 1 $(TL_OUT)/svg.log > $(BUILD)/results/timeline-svg.count

docs-timeline: examples ## docs/timeline.svg: the picture of minitensor's timeline (part 4)
	@mkdir -p $(TL_OUT)
	$(MT_OUT)/minitensor $(MT_OUT)/minitensor_plugin.so $(TL_OUT)/tables.html $(TL_OUT)/minitensor.json > /dev/null
	python3 tools/timeline_svg.py $(TL_OUT)/minitensor.json docs/timeline.svg \
	  "examples/minitensor, part 4: forward and backward through the Tracer fallback"
