/* The `simpler` command: entry point, --version and sub-command dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "simpler/callable.h"
#include "simpler/module.h"
#include "simpler/orchestration.h"
#include "simpler/version.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"info", cli_info, "print the platform, chip geometry and device memory"},
    {"run", cli_run, "run an example (or a packed callable FILE.spc) and check its result"},
    {"list", cli_list, "list examples, their cases and parameters"},
    {"smoke", cli_smoke,
     "exercise the sim chip: allocate, copy, host-map, run a kernel on every core"},
    {"pack", cli_pack,
     "pack an orchestration and kernels into a callable blob; --show inspects one"},
};
#define COMMAND_COUNT (int)(sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: simpler <command> [options]\n"
               "       simpler <command> --help    that command's options\n"
               "       simpler --version           release and ABI versions\n"
               "commands:\n");
    for (int i = 0; i < COMMAND_COUNT; i++)
        fprintf(f, "  %-7s %s\n", commands[i].name, commands[i].help);
    fprintf(f, "exit status: 0 passed, 1 wrong result or failed run, 2 usage error, 3 a file "
               "could not be read or written\n");
}

static void version(void)
{
    /* The command's own release, then the library actually loaded: they
     * differ when an installed libsimpler.so is not the one it was built with. */
    printf("simpler %s\n", SIMPLER_VERSION_STRING);
    printf("libsimpler %s (ABI %d; built against ABI %d)\n", sp_version(), sp_abi_version(),
           SIMPLER_ABI_VERSION);
    printf("runtime module ABI %u, orchestration ABI %d, callable blob version %u (reads %u..%u)\n",
           SP_PIPELINE_ABI_VERSION, SP_ORCH_ABI_VERSION, SP_CALLABLE_VERSION,
           SP_CALLABLE_VERSION_MIN, SP_CALLABLE_VERSION);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    for (int i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        version();
        return CLI_EXIT_OK;
    }
    const char *names[COMMAND_COUNT];
    for (int i = 0; i < COMMAND_COUNT; i++)
        names[i] = commands[i].name;
    const char *best = cli_suggest(cmd, names, COMMAND_COUNT);
    if (best)
        fprintf(stderr, "simpler: unknown command '%s' (did you mean %s?)\n", cmd, best);
    else
        fprintf(stderr, "simpler: unknown command '%s'\n", cmd);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
