/* A small user configuration (DK_CONFIG_HEADER="custom_config.h"): two
   backends, plain kernels (the row PyTorch calls Dense, named Plain here:
   special rows are found by their roles, never by name), an autograd layer
   and a tracing layer above it. The alias list is left out, so dispatch.h's
   default aliases apply. */
#define DK_FORALL_BACKEND_COMPONENTS(X, extra) \
    X(CPU, 1, Undefined, 0, extra)             \
    X(GPU, 1, Undefined, 0, extra)

#define DK_FORALL_FUNCTIONALITY_KEYS(X, extra)                                      \
    X(Plain,                 1,         , DK_R_BACKEND | DK_R_BACKEND_FN, extra)    \
    X(AutogradFunctionality, 1, Autograd, DK_R_AUTOGRAD, extra)                     \
    X(Tracing,               0,         , 0, extra)
