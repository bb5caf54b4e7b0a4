/* A plugin that only registers, through a static library block. Built in
   the program's configuration its block registers; built in another
   (DK_CALL_EPOCHS) it loads, but its block is refused with
   DK_ERR_CONFIG_MISMATCH: test_config_mismatch checks that the host sees
   both through dk_library_blocks. */
#include "dispatch.h"

static int block_cpu(int x) { return x + 1; }

DK_LIBRARY_IMPL(cmblock, CPU, m) {
    dk_library_impl(m, "inc", DK_Undefined, dk_unboxed(DK_FN(block_cpu), NULL));
}
