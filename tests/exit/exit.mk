# tests/exit/exit.mk - process exit, late thread-exit destructors, unloading
# the implementation, and the long churn (the memory issue's items 4.6, 4.4,
# 4.8 and 5). Included by the Makefile.
#
#   exit-test  (part of make test) in both reclamation modes, plain, under
#              ASan+UBSan and under ThreadSanitizer:
#              exit_main        main returns while a thread is parked in a
#                               kernel and others call: status 0, at once
#                               (EXIT_RUNS runs, each under timeout: a hang
#                               fails);
#              late_destructor  a call from a TLS destructor that runs after
#                               dispatch.h's never writes into the record
#                               it gave back (20 forked rounds);
#              late_rounds      calls from a destructor in each of glibc's
#                               destructor rounds, the last one included,
#                               on a stack unmapped after the join: no
#                               record keeps the gone thread's word,
#                               synchronize waits for a late call;
#              key_fail         pthread_setspecific failing (defined by
#                               the test): call epochs never attach the
#                               thread (its first call stops the process),
#                               or attach once a second try succeeds;
#              soak             the churn below, EXIT_SOAK_STEPS writer steps;
#              then unload_leak: libdispatch.so and libdispatch-epochs.so
#              dlopen'ed and dlclose'd 200 times beside a live thread that
#              used them (plain and ASan with detect_leaks).
#   soak       (not in make test) the long churn: SOAK_STEPS (10^6) writer
#              steps beside two readers, and test_quiescent's memory test
#              with as many impl/deregister cycles, both modes, plain, ASan,
#              TSan, printing their counts.

EXIT_DIR    := tests/exit
EXIT_OUT     = $(BUILD)/exit
EXIT_CFLAGS  = $(CSTD) $(WARN) -g -O1 -I.
# name:flags, with ~ for the spaces in flags
EXIT_SPACE  := $(EXIT_NOTHING) $(EXIT_NOTHING)
EXIT_SAN    := $(subst $(EXIT_SPACE),~,$(strip $(SAN)))
EXIT_MODES  := default: epochs:-DDK_CALL_EPOCHS \
               asan-default:$(EXIT_SAN) asan-epochs:-DDK_CALL_EPOCHS~$(EXIT_SAN) \
               tsan-default:$(TSAN) tsan-epochs:-DDK_CALL_EPOCHS~$(TSAN)
EXIT_ENV    := ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 TSAN_OPTIONS=halt_on_error=1
EXIT_RUNS   ?= 10
EXIT_TIMEOUT ?= 60
EXIT_SOAK_STEPS ?= 20000
SOAK_STEPS  ?= 1000000

.PHONY: exit-test soak

# $(call exit_run_def): the shell function run LABEL COMMAND... used below
exit_run_def = run() { label=$$1; shift; if "$$@" > $(EXIT_OUT)/log 2>&1; then ok=$$((ok+1)); echo "  ok    $$label"; \
	  sed 's/^/        /' $(EXIT_OUT)/log; else bad=$$((bad+1)); echo "  FAIL  $$label"; cat $(EXIT_OUT)/log; fi; }

exit-test: $(BUILD)/libdispatch.so | $(BUILD) ## exit with threads in the library, calls from late TLS destructors, libdispatch.so unloaded 200 times, a short soak; both modes, plain, ASan, TSan
	@$(MAKE) --no-print-directory lib CONFIG=epochs > /dev/null
	@mkdir -p $(EXIT_OUT) $(BUILD)/results; ok=0; bad=0; $(exit_run_def); \
	for m in $(EXIT_MODES); do name=$${m%%:*}; flags=$$(echo "$${m#*:}" | tr '~' ' '); \
	  for p in exit_main late_destructor late_rounds key_fail soak; do \
	    $(CC) $(EXIT_CFLAGS) $$flags -DSTEPS=$(EXIT_SOAK_STEPS) $(EXIT_DIR)/$$p.c -o $(EXIT_OUT)/$$p-$$name -lpthread \
	      > $(EXIT_OUT)/cc.log 2>&1 || { bad=$$((bad+1)); echo "  FAIL  $$p-$$name does not build"; cat $(EXIT_OUT)/cc.log; }; \
	  done; \
	  run "main returns while threads are parked in and calling the library: exit status 0 within $(EXIT_TIMEOUT) s ($$name, $(EXIT_RUNS) runs)" \
	    sh -c "i=0; while [ \$$i -lt $(EXIT_RUNS) ]; do i=\$$((i+1)); \
	      $(EXIT_ENV) timeout $(EXIT_TIMEOUT) $(EXIT_OUT)/exit_main-$$name > /dev/null || { echo \"run \$$i: status \$$?\"; exit 1; }; \
	    done; echo \"$(EXIT_RUNS) of $(EXIT_RUNS) runs exited with status 0\""; \
	  run "a call from a late TLS destructor leaves the record it gave back alone ($$name)" \
	    env $(EXIT_ENV) timeout 600 $(EXIT_OUT)/late_destructor-$$name; \
	  run "calls from destructors in every destructor round, the last one included: nothing links the gone thread's word ($$name)" \
	    env $(EXIT_ENV) timeout 600 $(EXIT_OUT)/late_rounds-$$name; \
	  run "pthread_setspecific fails: the thread's word is never left linked without an exit destructor ($$name)" \
	    env $(EXIT_ENV) timeout 600 $(EXIT_OUT)/key_fail-$$name; \
	  run "churn of every change kind beside two checking readers ($$name)" \
	    env $(EXIT_ENV) timeout 600 $(EXIT_OUT)/soak-$$name; \
	done; \
	for v in "plain::" "epochs:-DDK_CALL_EPOCHS:-epochs" "asan:$(EXIT_SAN):" "asan-epochs:-DDK_CALL_EPOCHS~$(EXIT_SAN):-epochs"; do \
	  name=$${v%%:*}; rest=$${v#*:}; flags=$$(echo "$${rest%:*}" | tr '~' ' '); lib=$(BUILD)/libdispatch$${rest##*:}.so; \
	  run "$$lib unloaded 200 times beside a live thread that used it: no heap growth ($$name)" \
	    sh -c "$(CC) $(EXIT_CFLAGS) $$flags $(EXIT_DIR)/unload_leak.c -o $(EXIT_OUT)/unload_leak-$$name -ldl -lpthread && \
	           $(EXIT_ENV) $(EXIT_OUT)/unload_leak-$$name $$lib"; \
	done; \
	echo "$$ok $$bad" > $(BUILD)/results/exit.count; [ $$bad = 0 ]

soak: | $(BUILD) ## the long churn: 10^6 writer steps (overrides, fallthrough and def toggles, libraries, hooks, tags) beside two readers, and test_quiescent with 10^6 cycles; both modes, plain, ASan, TSan (minutes; SOAK_STEPS=...)
	@mkdir -p $(EXIT_OUT) $(BUILD)/results; ok=0; bad=0; $(exit_run_def); \
	for m in $(EXIT_MODES); do name=$${m%%:*}; flags=$$(echo "$${m#*:}" | tr '~' ' '); \
	  run "soak, $(SOAK_STEPS) writer steps ($$name)" \
	    sh -c "$(CC) $(EXIT_CFLAGS) $$flags -DSTEPS=$(SOAK_STEPS) $(EXIT_DIR)/soak.c -o $(EXIT_OUT)/soak-long-$$name -lpthread && \
	           $(EXIT_ENV) $(EXIT_OUT)/soak-long-$$name"; \
	  run "tests/test_quiescent.c, $(SOAK_STEPS) impl/deregister cycles beside two callers ($$name)" \
	    sh -c "$(CC) $(EXIT_CFLAGS) $$flags -DCHURN_CYCLES=$(SOAK_STEPS) tests/test_quiescent.c \
	             -o $(EXIT_OUT)/quiescent-long-$$name $(LIBS_T) && \
	           { CMOCKA_MESSAGE_OUTPUT=stdout $(EXIT_ENV) $(EXIT_OUT)/quiescent-long-$$name > $(EXIT_OUT)/quiescent.log 2>&1; \
	             rc=\$$?; grep -vE '^\[ (RUN|      OK) ' $(EXIT_OUT)/quiescent.log; exit \$$rc; }"; \
	done; \
	echo "soak: $$ok passed, $$bad failed"; [ $$bad = 0 ]
