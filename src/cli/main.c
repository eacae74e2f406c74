/* The `simpler` command: entry point and sub-command dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: simpler <command> [options]\n"
        "commands:\n"
        "  info    print the platform, chip geometry and device memory\n"
        "  run     run an example end to end and compare it with its golden\n"
        "  list    list examples, their cases and parameters\n"
        "  smoke   exercise the sim chip: allocate, copy, host-map, run a kernel on every core\n"
        "  pack    pack an orchestration and kernels into a callable blob; --show inspects one\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "info") == 0)
        return cli_info(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0)
        return cli_run(argc - 1, argv + 1);
    if (strcmp(cmd, "list") == 0)
        return cli_list(argc - 1, argv + 1);
    if (strcmp(cmd, "smoke") == 0)
        return cli_smoke(argc - 1, argv + 1);
    if (strcmp(cmd, "pack") == 0)
        return cli_pack(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "simpler: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
