/* The implementation, in a translation unit of its own; included twice to
   show the second inclusion emits nothing. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"
#include "dispatch.h"
