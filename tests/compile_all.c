/* The compile matrix builds this file with every compiler and standard:
   the whole header, implementation included, must compile warning-free. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"

int dk_matrix_probe(void);
int dk_matrix_probe(void) {
    dk_keyset ks = dk_ks_or(dk_ks_from_key(DK_CPU), DK_KS_AFTER_AUTOGRAD);
    return dk_ks_slot(ks) + (int)dk_ks_highest_key(ks);
}
