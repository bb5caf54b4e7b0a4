# tests/cross/cross.mk - the cross-target matrix, included by the Makefile.
#
#   test-cross   builds tests/cross/runner.c (both reclamation modes), the
#                plugin of tests/plugin, tests/cross/libload.c with the
#                implementation as a shared object, and README's examples
#                for every target below, runs them there (natively, under
#                qemu-user or under wine) and compares what they print with
#                the host's, byte for byte. Two targets at a time (-j2);
#                one ok / FAIL line per target; "ok bad" in
#                $(BUILD)/results/cross.count.
#
#   host               the host compiler ($(CC)), glibc x86-64
#   i686               glibc i386 (cross gcc; runs natively with its own loader)
#   armhf, aarch64     glibc 32-bit ARM and AArch64 (cross gcc + qemu-user)
#   s390x              glibc big-endian s390x (cross gcc + qemu-user)
#   musl               musl-gcc (x86-64; dlclose keeps objects mapped)
#   mingw              Windows x86-64 (mingw-w64 + wine): .exe, .dll, FLS
#   mingw-interlocked  the same with DK_WIN32_ATOMICS (MSVC's Interlocked atomics)
#   tcc                tcc with DK_SINGLE_THREADED (no TLS, no atomics, no constructors)
#
# Debian packages as f:path:package triples (see DEPS in the Makefile); the Makefile's `deps` installs them
# when its DEPS includes $(CROSS_DEPS).

CROSS_TARGETS := host i686 armhf aarch64 s390x musl mingw mingw-interlocked tcc
CROSS_OUT      = $(BUILD)/cross
CROSS_DEPS    := f:/usr/bin/i686-linux-gnu-gcc:gcc-i686-linux-gnu \
                 f:/usr/i686-linux-gnu/include/stdio.h:libc6-dev-i386-cross \
                 f:/usr/bin/arm-linux-gnueabihf-gcc:gcc-arm-linux-gnueabihf \
                 f:/usr/arm-linux-gnueabihf/include/stdio.h:libc6-dev-armhf-cross \
                 f:/usr/bin/aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu \
                 f:/usr/aarch64-linux-gnu/include/stdio.h:libc6-dev-arm64-cross \
                 f:/usr/bin/s390x-linux-gnu-gcc:gcc-s390x-linux-gnu \
                 f:/usr/s390x-linux-gnu/include/stdio.h:libc6-dev-s390x-cross \
                 f:/usr/bin/qemu-s390x:qemu-user f:/usr/bin/musl-gcc:musl-tools \
                 f:/usr/bin/x86_64-w64-mingw32-gcc:gcc-mingw-w64-x86-64 f:/usr/bin/wine:wine f:/usr/bin/tcc:tcc

.PHONY: test-cross $(addprefix cross-,$(CROSS_TARGETS))

test-cross: | $(BUILD) ## build and run the tests for 9 targets (i386, ARM, AArch64, s390x, musl, Windows, tcc...), compare with the host
	@mkdir -p $(CROSS_OUT) $(BUILD)/results; rm -f $(CROSS_OUT)/*/verdict
	@$(MAKE) --no-print-directory -j2 -k $(addprefix cross-,$(CROSS_TARGETS)) || true
	@ok=0; bad=0; for t in $(CROSS_TARGETS); do \
	  if [ "$$(cat $(CROSS_OUT)/$$t/verdict 2>/dev/null)" = ok ]; then ok=$$((ok+1)); else bad=$$((bad+1)); fi; \
	done; echo "$$ok $$bad" > $(BUILD)/results/cross.count; \
	echo "  cross: $$ok targets ok, $$bad failed"; [ $$bad = 0 ]

cross-host: | $(BUILD)
	@CC="$(CC)" WARN="$(WARN)" sh tests/cross/target.sh host $(CROSS_OUT)

# every other target compares with the host's output
$(addprefix cross-,$(filter-out host mingw%,$(CROSS_TARGETS))): cross-%: cross-host
	@CC="$(CC)" WARN="$(WARN)" sh tests/cross/target.sh $* $(CROSS_OUT)
$(addprefix cross-,$(filter mingw%,$(CROSS_TARGETS))): cross-%: cross-host $(CROSS_OUT)/wineprefix/system.reg
	@CC="$(CC)" WARN="$(WARN)" sh tests/cross/target.sh $* $(CROSS_OUT)

# wine's first start creates its prefix (10-20 s): once, before both Windows targets
$(CROSS_OUT)/wineprefix/system.reg:
	@mkdir -p $(CROSS_OUT)
	@export WINEPREFIX="$(abspath $(CROSS_OUT))/wineprefix" WINEDEBUG=-all; \
	  { wineboot -i && wineserver -w; } > $(CROSS_OUT)/wineboot.log 2>&1 || \
	  { echo "  FAIL  wine cannot start (log: $(CROSS_OUT)/wineboot.log)"; cat $(CROSS_OUT)/wineboot.log; }
