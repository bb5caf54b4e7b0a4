/* dispatch_impl.c - the dispatcher's implementation, compiled once, into the
   host executable only.

   The registry, the thread-local state and every dk_* function must exist
   once per process: the host links this unit with -rdynamic, which exports
   them, and the plugin (built without it) binds to the host's copies when it
   is dlopen()ed. A second copy inside the plugin would mean a second default
   registry, which the host never calls through. */
#define DISPATCH_IMPLEMENTATION
#include "dispatch.h"
