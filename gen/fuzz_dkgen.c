/* libFuzzer harness for dkgen (make gen-fuzz, gen-fuzz-short; see gen/gen.mk).

   An input is one line of a schema file. When dk_schema_parse accepts it,
   dkgen must generate a header from it (in process, the code path of the
   command line), and that header must compile: the harness runs every
   command of DKGEN_FUZZ_CC (';'-separated; each gets " -I<dir>
   -DDKGEN_HEADER=... <root>/gen/tests/driver.c" appended) and aborts on a
   failure, which libFuzzer reports as a crash and keeps the input. With
   DKGEN_FUZZ_CC unset or empty the header is only generated: fast, for the
   sanitizers' view of dkgen itself. DKGEN_FUZZ_ROOT is the repository
   (default "."); DKGEN_FUZZ_DIR a scratch directory (default /tmp).

   clang -fsanitize=fuzzer,address,undefined gen/fuzz_dkgen.c */
#define DKGEN_NO_MAIN
#include "dkgen.c"

#include <stdint.h>
#include <unistd.h>

static char scratch[512], header[600], command[4096];
static const char *compilers, *root;

static void setup(void) {
    const char *dir = getenv("DKGEN_FUZZ_DIR");
    compilers = getenv("DKGEN_FUZZ_CC");
    root = getenv("DKGEN_FUZZ_ROOT") ? getenv("DKGEN_FUZZ_ROOT") : ".";
    snprintf(scratch, sizeof scratch, "%s/dkgen-fuzz-%ld", dir ? dir : "/tmp", (long)getpid());
    snprintf(command, sizeof command, "mkdir -p '%s'", scratch);
    if (system(command) != 0) { fprintf(stderr, "fuzz_dkgen: cannot create %s\n", scratch); abort(); }
    snprintf(header, sizeof header, "%s/fuzz_ops.h", scratch);
}

/* Compiles the header with each command of DKGEN_FUZZ_CC; aborts on a failure. */
static void compile(const char *line) {
    const char *c = compilers;
    while (c && *c) {
        const char *end = strchr(c, ';');
        size_t n = end ? (size_t)(end - c) : strlen(c);
        snprintf(command, sizeof command,
                 "%.*s -I'%s' -I'%s' -DDRIVER_NO_IMPLEMENTATION '-DDKGEN_HEADER=\"fuzz_ops.h\"' "
                 "-DDKGEN_FORALL=DKGEN_FORALL_FUZZ_OPS -fsyntax-only '%s/gen/tests/driver.c' 2> '%s/errors.txt'",
                 (int)n, c, root, scratch, root, scratch);
        if (n && system(command) != 0) {
            snprintf(command, sizeof command, "cat '%s/errors.txt' >&2", scratch);
            if (system(command) != 0) {}
            fprintf(stderr, "fuzz_dkgen: the header of this schema does not compile (%.*s):\n%s\n", (int)n, c, line);
            abort();
        }
        c = end ? end + 1 : NULL;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *line;
    const char *p;
    dk_schema *s;
    FILE *in, *out;
    int errors;
    if (!header[0]) setup();
    if (memchr(data, '\n', size) || memchr(data, '\r', size) || memchr(data, '\0', size)) return 0;
    line = (char *)malloc(size + 1);
    memcpy(line, data, size);
    line[size] = '\0';
    for (p = line; *p == ' ' || *p == '\t'; p++) {}
    if (!*p || *p == '#' || dk_schema_parse(p, &s) != DK_OK) { free(line); return 0; }
    dk_schema_free(s);
    in = tmpfile();
    out = fopen(header, "w");
    if (!in || !out) { fprintf(stderr, "fuzz_dkgen: cannot write %s\n", header); abort(); }
    fputs(line, in);
    rewind(in);
    errors = generate_stream(in, "fuzz_ops.txt", out, "fuzz_ops.h");
    fclose(in);
    fclose(out);
    if (errors) {
        fprintf(stderr, "fuzz_dkgen: dkgen rejected a schema the parser accepts:\n%s\n", line);
        abort();
    }
    compile(line);
    free(line);
    return 0;
}
