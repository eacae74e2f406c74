/* Module discovery: a runtime and a platform, by name, become the module
 * file libsimpler_<runtime>_<platform>.so (the build generates one per
 * pair) in the module directory: the caller's, or by default the directory
 * the object holding this code was loaded from (libsimpler.so; the build
 * puts the modules beside it). No path is built beside an executable. */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "simpler/status.h"
#include "simpler/worker.h"

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

/* The directory of the object this function is linked into: libsimpler.so,
 * or the executable when the worker is linked statically. 0 or -1. */
static int default_module_dir(char *buf, size_t len)
{
    Dl_info info;
    struct link_map *map = NULL;
    char path[PATH_MAX];
    if (!dladdr1((void *)default_module_dir, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return -1;
    if (map->l_name && map->l_name[0]) {
        snprintf(path, sizeof path, "%s", map->l_name);
    } else { /* the main program: the loader does not record its path */
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0)
            return -1;
        path[n] = 0;
    }
    char *slash = strrchr(path, '/');
    if (!slash)
        return snprintf(buf, len, ".") < (int)len ? 0 : -1;
    *slash = 0;
    int w = snprintf(buf, len, "%s", path[0] ? path : "/");
    return w > 0 && (size_t)w < len ? 0 : -1;
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
    char dir[PATH_MAX];
    if (opt && opt->module_dir)
        snprintf(dir, sizeof dir, "%s", opt->module_dir);
    else if (default_module_dir(dir, sizeof dir)) {
        snprintf(err, err_len, "cannot find the directory libsimpler was loaded from");
        return SP_EMODULE;
    }
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/libsimpler_%s_%s.so", dir, runtime, platform);
    if (access(path, R_OK) != 0) {
        snprintf(err, err_len, "no module for runtime '%s' on platform '%s': %s does not exist",
                 runtime, platform, path);
        return SP_EMODULE;
    }
    return sp_worker_open(path, opt, out, err, err_len);
}
