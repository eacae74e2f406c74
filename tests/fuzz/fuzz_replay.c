/* Runs a fuzz target's harness without libFuzzer: every file named on the
 * command line, or found in a directory named there, goes once through
 * LLVMFuzzerTestOneInput. A broken invariant aborts, which fails the ctest
 * test; so the committed corpus and every regression input run in a plain
 * `make test` with gcc, no clang needed. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = grown;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got == 0)
            break;
        len += got;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
        free(buf);
        return -1;
    }
    /* Exactly `len` bytes, as libFuzzer hands them over. */
    uint8_t *data = malloc(len ? len : 1);
    if (!data) {
        free(buf);
        return -1;
    }
    memcpy(data, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

/* Returns the inputs run from `path`, or -1 on an unreadable one. */
static int run_path(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "fuzz_replay: %s does not exist\n", path);
        return -1;
    }
    if (!S_ISDIR(sb.st_mode))
        return run_file(path) == 0 ? 1 : -1;
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while (n >= 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        int k = run_path(child);
        n = k < 0 ? -1 : n + k;
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    int total = 0;
    for (int i = 1; i < argc; i++) {
        int k = run_path(argv[i]);
        if (k < 0)
            return 1;
        printf("fuzz_replay: %s: %d inputs passed\n", argv[i], k);
        total += k;
    }
    if (total == 0) {
        fprintf(stderr, "fuzz_replay: no inputs found\n");
        return 1;
    }
    return 0;
}
