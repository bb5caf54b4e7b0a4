# tests/plugin/plugin.mk - shared-object tests, included by the Makefile.
#
#   plugin-test   a plugin (DK_LIBRARY_IMPL block in a .so) loaded and
#                 unloaded 1,000 times by host.c, in both reclamation modes,
#                 plain and under ASan+UBSan, while another thread calls
#                 the plugin's kernel throughout (and declares quiescent
#                 points); two_blocks_host.c unloads plugin_two.c, whose
#                 object registers through two library blocks, and checks
#                 that nothing of either is left; unload_host.c unloads it with dk_library_unload
#                 before dlclose while a kernel of another thread uses the
#                 dynamic loader. Then
#                 $(BUILD)/libdispatch.so (`make lib`: -fvisibility=hidden,
#                 DK_SHARED exports) dlopen'ed from C and from Python's ctypes
#                 (small static TLS).

PLUGIN_DIR   := tests/plugin
PLUGIN_OUT    = $(BUILD)/plugin
PLUGIN_CFLAGS = $(CSTD) $(WARN_CXX) -g -O1 -I. -I$(PLUGIN_DIR)
# name:flags, with ~ for the spaces in flags
PLUGIN_SPACE := $(PLUGIN_NOTHING) $(PLUGIN_NOTHING)
PLUGIN_SAN   := $(subst $(PLUGIN_SPACE),~,$(strip $(SAN)))
PLUGIN_MODES := default:  epochs:-DDK_CALL_EPOCHS \
                asan-default:$(PLUGIN_SAN) asan-epochs:-DDK_CALL_EPOCHS~$(PLUGIN_SAN)

.PHONY: plugin-test

plugin-test: $(BUILD)/libdispatch.so | $(BUILD) ## load and unload a plugin 1,000 times (threads calling it); dlopen the implementation from C and Python
	@mkdir -p $(PLUGIN_OUT) $(BUILD)/results; ok=0; bad=0; \
	run() { label=$$1; shift; if "$$@" > $(PLUGIN_OUT)/log 2>&1; then ok=$$((ok+1)); echo "  ok    $$label"; \
	        sed 's/^/        /' $(PLUGIN_OUT)/log; else bad=$$((bad+1)); echo "  FAIL  $$label"; cat $(PLUGIN_OUT)/log; fi; }; \
	for m in $(PLUGIN_MODES); do name=$${m%%:*}; flags=$$(echo "$${m#*:}" | tr '~' ' '); \
	  run "plugin loaded and unloaded 1,000 times ($$name)" sh -c \
	    "$(CC) $(PLUGIN_CFLAGS) $$flags -rdynamic $(PLUGIN_DIR)/host.c -o $(PLUGIN_OUT)/host-$$name -ldl -lpthread && \
	     $(CC) $(PLUGIN_CFLAGS) $$flags -fPIC -shared $(PLUGIN_DIR)/plugin.c -o $(PLUGIN_OUT)/plugin-$$name.so && \
	     ! nm -D --defined-only $(PLUGIN_OUT)/plugin-$$name.so | grep -q ' dk_' && \
	     $(PLUGIN_OUT)/host-$$name $(PLUGIN_OUT)/plugin-$$name.so"; \
	  run "a plugin of two library blocks unloaded whole, by dk_library_unload and by dlclose ($$name)" sh -c \
	    "$(CC) $(PLUGIN_CFLAGS) $$flags -rdynamic $(PLUGIN_DIR)/two_blocks_host.c -o $(PLUGIN_OUT)/two-$$name -ldl -lpthread && \
	     $(CC) $(PLUGIN_CFLAGS) $$flags -fPIC -shared $(PLUGIN_DIR)/plugin_two.c -o $(PLUGIN_OUT)/plugin_two-$$name.so && \
	     $(PLUGIN_OUT)/two-$$name $(PLUGIN_OUT)/plugin_two-$$name.so"; \
	  run "plugin unloaded with dk_library_unload while a kernel uses the loader ($$name)" sh -c \
	    "$(CC) $(PLUGIN_CFLAGS) $$flags -rdynamic $(PLUGIN_DIR)/unload_host.c -o $(PLUGIN_OUT)/unload-$$name -ldl -lpthread && \
	     $(PLUGIN_OUT)/unload-$$name $(PLUGIN_OUT)/plugin-$$name.so"; \
	done; \
	run "the implementation as a shared object, dlopen'ed from C" sh -c \
	  "$(CC) $(PLUGIN_CFLAGS) $(PLUGIN_DIR)/load_lib.c -o $(PLUGIN_OUT)/load_lib -ldl && \
	   $(PLUGIN_OUT)/load_lib $(BUILD)/libdispatch.so"; \
	run "the implementation as a shared object, loaded by Python's ctypes" \
	  python3 $(PLUGIN_DIR)/load_lib.py $(BUILD)/libdispatch.so; \
	echo "$$ok $$bad" > $(BUILD)/results/plugin.count; [ $$bad = 0 ]
