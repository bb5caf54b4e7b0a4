/* The implementation of dispatch.h as a library of its own: libdispatch.so
   (built with -DDK_SHARED -fvisibility=hidden: only dk_ symbols are exported)
   and libdispatch.a. `make` builds both and `make install` installs them. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"
