/* DISPATCH_STATIC: each translation unit has its own private copy. */
#define DISPATCH_STATIC
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"
#include <string.h>

int static_b_name_is_cpu(void);

int main(void);
int main(void) {
    return (strcmp(dk_key_name(DK_CPU), "CPU") == 0 && static_b_name_is_cpu()) ? 0 : 1;
}
