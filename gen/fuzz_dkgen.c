/* libFuzzer harness for dkgen (make gen-fuzz, gen-fuzz-short; see gen/gen.mk).

   An input is a schema file. When dk_schema_parse accepts each of its lines
   (but blank and comment lines), dkgen must generate a header from it (in
   process, the code path of the command line), and that header must
   compile: several lines exercise dkgen's C names across operators. The
   harness runs every
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

/* Every line as dkgen reads it is blank, a comment or a schema the parser accepts. */
static int all_lines_parse(char *text) {
    char *line = text, *end;
    int ok = 1;
    for (; ok && line; line = end ? end + 1 : NULL) {
        dk_schema *s;
        if ((end = strchr(line, '\n')) != NULL) *end = '\0';
        while (*line == ' ' || *line == '\t') line++;
        if (*line && *line != '#') {
            ok = dk_schema_parse(line, &s) == DK_OK;
            if (ok) dk_schema_free(s);
        }
        if (end) *end = '\n';
    }
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text;
    FILE *in, *out;
    int errors;
    if (!header[0]) setup();
    if (memchr(data, '\r', size) || memchr(data, '\0', size)) return 0;
    text = (char *)malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    if (!all_lines_parse(text)) { free(text); return 0; }
    in = tmpfile();
    out = fopen(header, "w");
    if (!in || !out) { fprintf(stderr, "fuzz_dkgen: cannot write %s\n", header); abort(); }
    fputs(text, in);
    rewind(in);
    errors = generate_stream(in, "fuzz_ops.txt", out, "fuzz_ops.h");
    fclose(in);
    fclose(out);
    if (errors) {
        fprintf(stderr, "fuzz_dkgen: dkgen rejected schemas the parser accepts:\n%s\n", text);
        abort();
    }
    compile(text);
    free(text);
    return 0;
}
