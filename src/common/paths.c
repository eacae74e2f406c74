/* Paths relative to the running executable (/proc/self/exe) or to the
 * object this file is linked into (the loader's link map). */
#include "common/paths.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sp__path_beside_exe(char *buf, size_t len, const char *rel)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    int w = snprintf(buf, len, "%s/%s", exe, rel);
    return w > 0 && (size_t)w < len ? 0 : -1;
}

int sp__object_dir(const void *addr, char *buf, size_t len)
{
    Dl_info info;
    struct link_map *map = NULL;
    char path[PATH_MAX];
    if (!dladdr1(addr, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
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

/* Where the build tree keeps what an install puts under share/simpler/:
 * a prefix of rel and the directory (beside the executable's) it maps to. */
static const struct {
    const char *prefix;
    const char *build_dir;
} build_tree_data[] = {
    {"examples/", "../examples/"}, /* examples/CMakeLists.txt: build/examples/<name>.spc */
    {"smoke/", "../lib/"},         /* src/cli/CMakeLists.txt: build/lib/sp_smoke_*.so */
};

int sp__data_path(char *buf, size_t len, const char *rel)
{
    char installed[PATH_MAX], built[PATH_MAX];
    snprintf(installed, sizeof installed, "../share/simpler/%s", rel);
    if (sp__path_beside_exe(buf, len, installed) == 0 && access(buf, R_OK) == 0)
        return 0;
    for (size_t i = 0; i < sizeof build_tree_data / sizeof build_tree_data[0]; i++) {
        size_t n = strlen(build_tree_data[i].prefix);
        if (strncmp(rel, build_tree_data[i].prefix, n) != 0)
            continue;
        snprintf(built, sizeof built, "%s%s", build_tree_data[i].build_dir, rel + n);
        char path[PATH_MAX];
        if (sp__path_beside_exe(path, sizeof path, built) == 0 && access(path, R_OK) == 0) {
            int w = snprintf(buf, len, "%s", path);
            return w > 0 && (size_t)w < len ? 0 : -1;
        }
    }
    sp__path_beside_exe(buf, len, installed); /* the path the message names */
    return -1;
}
