/* Module discovery: a runtime and a platform, by name, become the module
 * file libsimpler_<runtime>_<platform>.so (the build generates one per
 * pair), looked for in order in: the caller's module_dir alone when it is
 * given; else each directory of SIMPLER_MODULE_PATH (read by settings.c),
 * then <dir of libsimpler.so>/simpler (an installed prefix: lib/simpler),
 * then the directory of libsimpler.so itself (the build tree puts the
 * modules beside it). Never beside the executable: a program finds the
 * modules of the library it links, wherever it runs from. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/paths.h"
#include "simpler/status.h"
#include "simpler/worker.h"
#include "worker/worker_internal.h"

#define WK_NAME_MAX 32

/* A runtime or platform name: 1..31 of [a-z0-9_], so it cannot name a
 * path outside the module directory. */
static int name_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= WK_NAME_MAX - 1 ||
            !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_'))
            return 0;
    return n > 0;
}

/* One module search: the file looked for, the first path found, and the
 * places looked, for the message when none has it. */
typedef struct module_search {
    const char *file;
    char path[PATH_MAX + 64];
    char looked[1536];
    size_t used;
} module_search;

static void looked_add(module_search *ms, const char *dir, size_t n, const char *why)
{
    size_t room = sizeof ms->looked - ms->used;
    int w = snprintf(ms->looked + ms->used, room, "%s%.*s%s%s%s", ms->used ? ", " : "", (int)n, dir,
                     why ? " (" : "", why ? why : "", why ? ")" : "");
    if (w > 0)
        ms->used += (size_t)w < room ? (size_t)w : room - 1;
}

/* 1 if the module file is in the n bytes of `dir` (its path in ms->path),
 * else 0 and the path tried is recorded with why it was searched. */
static int search_dir(module_search *ms, const char *dir, size_t n, const char *why)
{
    int w = snprintf(ms->path, sizeof ms->path, "%.*s/%s", (int)n, dir, ms->file);
    if (w <= 0 || (size_t)w >= sizeof ms->path) {
        looked_add(ms, dir, n, "too long");
        return 0;
    }
    if (access(ms->path, R_OK) == 0)
        return 1;
    looked_add(ms, ms->path, (size_t)w, why);
    return 0;
}

SP_EXPORT int sp_worker_open_runtime(const char *runtime, const char *platform,
                                     const sp_worker_options *opt, sp_worker **out, char *err,
                                     size_t err_len)
{
    char no_err[1];
    if (!err) {
        err = no_err;
        err_len = sizeof no_err;
    }
    if (out)
        *out = NULL;
    if (!platform)
        platform = "sim";
    if (!runtime || !name_ok(runtime) || !name_ok(platform)) {
        snprintf(err, err_len,
                 "runtime '%s' / platform '%s': a name is 1..31 of a-z, 0-9 and _ (e.g. hbg, "
                 "tmr; sim)",
                 runtime ? runtime : "(null)", platform);
        return SP_EINVAL;
    }
    char file[2 * WK_NAME_MAX + 24];
    module_search ms = {.file = file};
    snprintf(file, sizeof file, "libsimpler_%s_%s.so", runtime, platform);
    int found = 0;
    if (opt && opt->module_dir) {
        found = search_dir(&ms, opt->module_dir, strlen(opt->module_dir), "options.module_dir");
    } else {
        const char *env = wk_env_module_path();
        for (const char *p = env; p && *p && !found;) {
            size_t n = strcspn(p, ":");
            if (n) /* an empty entry names no directory (not ".") */
                found = search_dir(&ms, p, n, "SIMPLER_MODULE_PATH");
            p += n + (p[n] == ':');
        }
        char lib[PATH_MAX], sub[PATH_MAX + 16];
        if (!found && sp__object_dir((const void *)(uintptr_t)name_ok, lib, sizeof lib) == 0) {
            snprintf(sub, sizeof sub, "%s/simpler", lib);
            found = search_dir(&ms, sub, strlen(sub), "installed") ||
                    search_dir(&ms, lib, strlen(lib), "beside libsimpler");
        } else if (!found) {
            static const char unknown[] = "(the directory of libsimpler: not found)";
            looked_add(&ms, unknown, sizeof unknown - 1, NULL);
        }
    }
    if (!found) {
        snprintf(err, err_len,
                 "no module for runtime '%s' on platform '%s': %s does not exist in any place "
                 "looked: %s; point options.module_dir or SIMPLER_MODULE_PATH (directories "
                 "separated by ':') at the directory that holds it (installed: "
                 "<prefix>/lib/simpler)",
                 runtime, platform, file, ms.looked);
        return SP_EMODULE;
    }
    return sp_worker_open(ms.path, opt, out, err, err_len);
}
