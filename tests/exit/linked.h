/* tests/exit/linked.h: shared by the exit tests that include the
   implementation (after dispatch.h). */
#ifndef EXIT_LINKED_H
#define EXIT_LINKED_H

/* Records whose word is another thread's (the calling thread's is
   dk__rd.ctr): after a thread is joined, none may stay linked, or a writer's
   scan would read the gone thread's storage. 0 without call epochs. */
static int linked_elsewhere(void) {
    int n = 0;
#ifdef DK_CALL_EPOCHS
    const dk__reader *r;
    dk__mutex_lock(&dk__threads_lock);
    for (r = dk__readers; r; r = r->next)
        if (r->ctr && r->ctr != &dk__rd.ctr) n++;
    dk__mutex_unlock(&dk__threads_lock);
#endif
    return n;
}

#endif
