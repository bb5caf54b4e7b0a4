/* Key lists for tests/test_user_lists.c: no PyTorch names but the alias
   Autograd, which has no autograd layer to cover here; two aliases of one
   role; user aliases over sets of keys (KEYS(...)). */
#define DK_FORALL_BACKEND_COMPONENTS(X, extra) \
    X(Paper,  0, Undefined, 0, extra)          \
    X(Screen, 0, Undefined, 0, extra)

#define DK_FORALL_FUNCTIONALITY_KEYS(X, extra)                      \
    X(Ink,   1,     , DK_R_BACKEND | DK_R_BACKEND_FN, extra)        \
    X(Trace, 0,     , 0, extra)                                     \
    X(Glow,  1, Glow, 0, extra)

#define DK_FORALL_ALIAS_KEYS(X, extra)             \
    X(Autograd,       AUTOGRAD_ALIAS, extra)       \
    X(Everywhere,     BACKEND, extra)              \
    X(AlsoEverywhere, BACKEND, extra)              \
    X(AllGlow,        KEYS(Glow), extra)           \
    X(TraceAndGlow,   KEYS(Trace, Glow), extra)
