#define DISPATCH_STATIC
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"
#include <string.h>

int static_b_name_is_cpu(void);
int static_b_name_is_cpu(void) { return strcmp(dk_key_name(DK_CPU), "CPU") == 0; }
