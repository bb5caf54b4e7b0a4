/* 8 backends + 57 functionality bits = 65 > 64: rejected at compile time. */
#define DK_FORALL_BACKEND_COMPONENTS(X, e) X(B1,1,Undefined,0,e) X(B2,1,Undefined,0,e) \
    X(B3,1,Undefined,0,e) X(B4,1,Undefined,0,e) X(B5,1,Undefined,0,e) X(B6,1,Undefined,0,e) \
    X(B7,1,Undefined,0,e) X(B8,1,Undefined,0,e)
#define DK__F8(X, p, e) X(p##1,0,,0,e) X(p##2,0,,0,e) X(p##3,0,,0,e) X(p##4,0,,0,e) \
    X(p##5,0,,0,e) X(p##6,0,,0,e) X(p##7,0,,0,e) X(p##8,0,,0,e)
#define DK_FORALL_FUNCTIONALITY_KEYS(X, e) X(Dense, 1, , DK_R_BACKEND, e) \
    DK__F8(X, A, e) DK__F8(X, B, e) DK__F8(X, C, e) DK__F8(X, D, e) DK__F8(X, E, e) \
    DK__F8(X, F, e) DK__F8(X, G, e)
