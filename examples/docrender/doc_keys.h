/* The key lists of the document renderer (DK_CONFIG_HEADER="doc_keys.h"):
   no tensors, no autograd, none of PyTorch's keys. */

/* Backends: where a document is rendered. OwnAutograd, AutocastKey and
   Functional are PyTorch's columns: 0, Undefined, 0. */
#define DK_FORALL_BACKEND_COMPONENTS(X, extra) \
    X(Raster, 0, Undefined, 0, extra)          \
    X(Vector, 0, Undefined, 0, extra)          \
    X(Text,   0, Undefined, 0, extra)

/* Layers, lowest priority first. Render is the plain-kernel row (the role
   PyTorch's Dense plays): one runtime key per backend, named after the
   backend (Raster, Vector, Text). Accessibility is per backend too
   (AccessibleRaster...). Cache, Logging and Profile are one key each. */
#define DK_FORALL_FUNCTIONALITY_KEYS(X, extra)                              \
    X(Render,        1,           , DK_R_BACKEND | DK_R_BACKEND_FN, extra)  \
    X(Cache,         0,           , 0, extra)                               \
    X(Accessibility, 1, Accessible, 0, extra)                               \
    X(Logging,       0,           , 0, extra)                               \
    X(Profile,       0,           , 0, extra)

/* Alias keys. AnyBackend plays CompositeExplicitAutograd's role (BACKEND:
   a kernel for every backend that has none of its own); Portable plays
   CompositeImplicitAutograd's (MATH: also the catch-all, DK_Undefined);
   AllAccessible is a user set, Accessibility on every backend, for
   fallbacks. */
#define DK_FORALL_ALIAS_KEYS(X, extra)      \
    X(AnyBackend,    BACKEND, extra)        \
    X(Portable,      MATH, extra)           \
    X(AllAccessible, KEYS(Accessibility), extra)
