/* 17 backend components: must be rejected at compile time (masks are 16 bits). */
#define DK__B17(X, e) X(B1,1,Undefined,0,e) X(B2,1,Undefined,0,e) X(B3,1,Undefined,0,e) \
    X(B4,1,Undefined,0,e) X(B5,1,Undefined,0,e) X(B6,1,Undefined,0,e) X(B7,1,Undefined,0,e) \
    X(B8,1,Undefined,0,e) X(B9,1,Undefined,0,e) X(B10,1,Undefined,0,e) X(B11,1,Undefined,0,e) \
    X(B12,1,Undefined,0,e) X(B13,1,Undefined,0,e) X(B14,1,Undefined,0,e) X(B15,1,Undefined,0,e) \
    X(B16,1,Undefined,0,e) X(B17,1,Undefined,0,e)
#define DK_FORALL_BACKEND_COMPONENTS(X, extra) DK__B17(X, extra)
#define DK_FORALL_FUNCTIONALITY_KEYS(X, extra) X(Dense, 1, , DK_R_BACKEND, extra)
