# gen/gen.mk - the checks of gen/dkgen, the generator of typed bindings.
#
# Included by the top-level Makefile, which sets BUILD, the compilers, WARN,
# SAN and FUZZ_SAN and builds $(BUILD)/dkgen; `make test` runs gen-check,
# gen-check-libtorch and gen-fuzz-short. Each writes "<passed> <failed>" to
# $(BUILD)/results/gen-*.count, which tests/summary.sh adds up.
#
#   gen-check           dkgen as a command (gen/tests/check_dkgen.sh: errors name
#                       their lines, every line is read, lines of any length, '#'
#                       comments, clashing C names), and the header of
#                       gen/tests/adversarial.txt compiled as C99 and C11 (gcc,
#                       clang) and C++11 (g++, clang++), then run under ASan+UBSan:
#                       its operators def and bind (~30 s)
#   gen-check-libtorch  all 3,199 schemas of libtorch 1.13.1
#                       (tests/conformance/schemas-1.13.1.txt) generate; the header
#                       compiles as C99 (gcc, then run: all 3,199 operators def and
#                       bind), C11 (clang) and C++11 (g++, clang++) (~1.5 min)
#   gen-fuzz-short      gen/tests/fuzz_schemas.txt (schemas that gen-fuzz found,
#                       kept as a fixed list) through dkgen, the compilers of
#                       gen-check and a run under ASan+UBSan, and a fixed-seed
#                       bounded libFuzzer run of dkgen under ASan+UBSan
#                       (GEN_FUZZ_SHORT_RUNS inputs, generation only) (~1 min)
#   gen-fuzz            libFuzzer + ASan + UBSan on dkgen for GEN_FUZZ_SECONDS
#                       (default 600): each schema the parser accepts must generate
#                       a header that compiles (GEN_FUZZ_CC: gcc -std=c99 and
#                       clang++ -std=c++11); a failing input is kept in
#                       $(BUILD)/gen/fuzz/artifacts/

GEN_OUT     = $(BUILD)/gen
GEN_DKGEN   = $(BUILD)/dkgen
GEN_MATRIX  = "$(CC) -std=c99 $(WARN)" "$(CC) -std=c11 $(WARN)" "$(CLANG) -std=c99 $(WARN)" \
              "$(CLANG) -std=c11 $(WARN)" "$(CC) -std=c99 $(WARN) -O2 -DDK_CALL_EPOCHS" \
              "$(CXX) -x c++ -std=c++11 $(WARN_CXX)" "$(CLANGXX) -x c++ -std=c++11 $(WARN_CXX)"
GEN_LIBTORCH_MATRIX = "$(CLANG) -std=c11 $(WARN)" "$(CXX) -x c++ -std=c++11 $(WARN_CXX)" \
                      "$(CLANGXX) -x c++ -std=c++11 $(WARN_CXX)"
GEN_LIBTORCH ?= $(SCHEMA_VECTORS)
GEN_FUZZ_SECONDS ?= 600
GEN_FUZZ_SHORT_RUNS ?= 200000
GEN_FUZZ_FLAGS ?= $(CSTD) $(WARN_CXX) -g -O1 $(FUZZ_SAN) -I.
GEN_FUZZ_CC ?= $(CC) -std=c99 $(WARN);$(CLANGXX) -x c++ -std=c++11 $(WARN_CXX)
GEN_FUZZ_ARGS ?=

.PHONY: gen-check gen-check-libtorch gen-fuzz-short gen-fuzz

$(GEN_OUT)/fuzz_dkgen: gen/fuzz_dkgen.c gen/dkgen.c dispatch.h | fuzz-runtime
	@mkdir -p $(@D)
	$(CLANG) $(GEN_FUZZ_FLAGS) $< -o $@

# $(1): schema file, $(2): header to write, $(3) label: dkgen must succeed
# (warnings of renamed operators go to $(2).err)
define gen_header
	if $(GEN_DKGEN) $(1) $(2) 2> $(2).err; then ok=$$((ok+1)); \
	  echo "  ok    $(3): $$(grep -c '^/\* ---- ' $(2)) operators generated from $(1)"; \
	else bad=$$((bad+1)); echo "  FAIL  $(3): dkgen $(1)"; head -20 $(2).err; fi
endef

# $(1): the header, $(2): its DKGEN_FORALL_ macro, $(3): extra flags, $(4):
# "all" (every operator must def and bind) or "": the driver is built with
# gcc -std=c99 and run
define gen_run
	if $(CC) -std=c99 $(WARN) -O0 $(3) -I. -I$(dir $(1)) '-DDKGEN_HEADER="$(notdir $(1))"' \
	     -DDKGEN_FORALL=$(2) gen/tests/driver.c -o $(1).run -lpthread > $(1).run.log 2>&1 && \
	   $(1).run $(4) >> $(1).run.log 2>&1; \
	then ok=$$((ok+1)); echo "  ok    $(notdir $(1)) run: $$(tail -1 $(1).run.log)"; \
	else bad=$$((bad+1)); echo "  FAIL  $(notdir $(1)) run"; tail -20 $(1).run.log; fi
endef

gen-check: $(GEN_DKGEN) ## dkgen as a command; gen/tests/adversarial.txt's header as C99/C11/C++, run
	@mkdir -p $(GEN_OUT) $(BUILD)/results; ok=0; bad=0; \
	sh gen/tests/check_dkgen.sh $(GEN_DKGEN) $(GEN_OUT)/check; \
	cp $(GEN_OUT)/check/check.count $(BUILD)/results/gen-check.count; \
	$(call gen_header,gen/tests/adversarial.txt,$(GEN_OUT)/adversarial.h,adversarial schemas); \
	if [ -f $(GEN_OUT)/adversarial.h ]; then \
	  $(call gen_run,$(GEN_OUT)/adversarial.h,DKGEN_FORALL_ADVERSARIAL,$(SAN),); \
	fi; echo "$$ok $$bad" > $(BUILD)/results/gen-check-run.count; \
	[ -f $(GEN_OUT)/adversarial.h ] && sh gen/tests/compile_matrix.sh $(GEN_OUT)/adversarial.h \
	  DKGEN_FORALL_ADVERSARIAL $(GEN_OUT)/matrix $(BUILD)/results/gen-check-matrix.count $(GEN_MATRIX); \
	for c in gen-check gen-check-run gen-check-matrix; do read p f < $(BUILD)/results/$$c.count; \
	  [ "$$f" = 0 ] || exit 1; done

gen-check-libtorch: $(GEN_DKGEN) ## all 3,199 libtorch 1.13.1 schemas generate; the header as C99/C11/C++, run
	@mkdir -p $(GEN_OUT)/libtorch $(BUILD)/results; ok=0; bad=0; \
	cut -f1 $(GEN_LIBTORCH) > $(GEN_OUT)/libtorch/libtorch_ops.txt; \
	$(call gen_header,$(GEN_OUT)/libtorch/libtorch_ops.txt,$(GEN_OUT)/libtorch/libtorch_ops.h,libtorch 1.13.1); \
	schemas=$$(grep -vc '^#' $(GEN_LIBTORCH)); \
	ops=$$(grep -c '^/\* ---- ' $(GEN_OUT)/libtorch/libtorch_ops.h 2>/dev/null); \
	if [ "$$ops" = "$$schemas" ]; then ok=$$((ok+1)); echo "  ok    $$ops of $$schemas libtorch schemas generate"; \
	else bad=$$((bad+1)); echo "  FAIL  $${ops:-0} of $$schemas libtorch schemas generate"; fi; \
	if [ -f $(GEN_OUT)/libtorch/libtorch_ops.h ]; then \
	  $(call gen_run,$(GEN_OUT)/libtorch/libtorch_ops.h,DKGEN_FORALL_LIBTORCH_OPS,,all); \
	fi; echo "$$ok $$bad" > $(BUILD)/results/gen-libtorch.count; \
	[ -f $(GEN_OUT)/libtorch/libtorch_ops.h ] && sh gen/tests/compile_matrix.sh $(GEN_OUT)/libtorch/libtorch_ops.h \
	  DKGEN_FORALL_LIBTORCH_OPS $(GEN_OUT)/libtorch $(BUILD)/results/gen-libtorch-matrix.count $(GEN_LIBTORCH_MATRIX); \
	for c in gen-libtorch gen-libtorch-matrix; do read p f < $(BUILD)/results/$$c.count; \
	  [ "$$f" = 0 ] || exit 1; done

# One file per schema line: the fuzzer's seeds.
$(GEN_OUT)/fuzz/seed: gen/tests/adversarial.txt gen/tests/fuzz_schemas.txt
	@rm -rf $@; mkdir -p $@
	@cat $^ | awk -v dir=$@ '!/^#/ && NF { f = sprintf("%s/%05d", dir, ++n); printf "%s", $$0 > f; close(f) }'

gen-fuzz-short: $(GEN_DKGEN) $(GEN_OUT)/fuzz_dkgen $(GEN_OUT)/fuzz/seed ## the fixed fuzz list as C99/C11/C++, and a fixed-seed bounded fuzz run
	@mkdir -p $(GEN_OUT)/fuzz-short $(BUILD)/results; ok=0; bad=0; \
	$(call gen_header,gen/tests/fuzz_schemas.txt,$(GEN_OUT)/fuzz-short/fuzz_schemas.h,fuzz list); \
	if [ -f $(GEN_OUT)/fuzz-short/fuzz_schemas.h ]; then \
	  $(call gen_run,$(GEN_OUT)/fuzz-short/fuzz_schemas.h,DKGEN_FORALL_FUZZ_SCHEMAS,$(SAN),); \
	fi; \
	rm -rf $(GEN_OUT)/fuzz-short/corpus; cp -r $(GEN_OUT)/fuzz/seed $(GEN_OUT)/fuzz-short/corpus; \
	if DKGEN_FUZZ_CC= DKGEN_FUZZ_DIR=$(GEN_OUT)/fuzz-short $(GEN_OUT)/fuzz_dkgen -seed=1 -runs=$(GEN_FUZZ_SHORT_RUNS) -max_len=4096 \
	     -dict=tests/fuzz/schema.dict -artifact_prefix=$(GEN_OUT)/fuzz-short/ $(GEN_OUT)/fuzz-short/corpus \
	     > $(GEN_OUT)/fuzz-short/fuzz.log 2>&1; \
	then ok=$$((ok+1)); echo "  ok    dkgen fuzzed: $$(grep -E '^Done [0-9]+ runs' $(GEN_OUT)/fuzz-short/fuzz.log), no crash"; \
	else bad=$$((bad+1)); echo "  FAIL  dkgen fuzzing (see $(GEN_OUT)/fuzz-short/fuzz.log)"; \
	  tail -30 $(GEN_OUT)/fuzz-short/fuzz.log; fi; \
	echo "$$ok $$bad" > $(BUILD)/results/gen-fuzz.count; \
	[ -f $(GEN_OUT)/fuzz-short/fuzz_schemas.h ] && sh gen/tests/compile_matrix.sh $(GEN_OUT)/fuzz-short/fuzz_schemas.h \
	  DKGEN_FORALL_FUZZ_SCHEMAS $(GEN_OUT)/fuzz-short $(BUILD)/results/gen-fuzz-matrix.count $(GEN_MATRIX); \
	for c in gen-fuzz gen-fuzz-matrix; do read p f < $(BUILD)/results/$$c.count; [ "$$f" = 0 ] || exit 1; done

# New inputs go to $(BUILD)/gen/fuzz/corpus; the seeds only start the run.
gen-fuzz: $(GEN_OUT)/fuzz_dkgen $(GEN_OUT)/fuzz/seed ## fuzz dkgen for GEN_FUZZ_SECONDS (default 600), compiling each header
	@mkdir -p $(GEN_OUT)/fuzz/corpus $(GEN_OUT)/fuzz/artifacts
	DKGEN_FUZZ_CC="$(GEN_FUZZ_CC)" DKGEN_FUZZ_DIR=$(GEN_OUT)/fuzz $(GEN_OUT)/fuzz_dkgen \
	  -max_total_time=$(GEN_FUZZ_SECONDS) -max_len=4096 -dict=tests/fuzz/schema.dict \
	  -artifact_prefix=$(GEN_OUT)/fuzz/artifacts/ -print_final_stats=1 $(GEN_FUZZ_ARGS) \
	  $(GEN_OUT)/fuzz/corpus $(GEN_OUT)/fuzz/seed tests/fuzz/corpus
