/* `simpler list`: the examples `simpler run` knows, their cases and
 * parameters. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "example.h"

static const char list_help[] =
    "usage: simpler list [EXAMPLE]\n"
    "List the examples `simpler run` knows (or one of them): description, cases (\"tmr only\"\n"
    "marks a case host_build_graph cannot run) and parameters with their defaults.\n"
    "  -h, --help   this text\n";

static void print_example(const ex_example *ex)
{
    printf("%s: %s\n", ex->name, ex->description);
    printf("  cases:");
    for (int c = 0; c < ex->case_count; c++)
        printf(" %s%s", ex->cases[c].name, ex->cases[c].needs_live_read ? " (tmr only)" : "");
    printf("\n  parameters:\n");
    for (int p = 0; p < ex->param_count; p++)
        printf("    %-14s default %-10s %s\n", ex->params[p].name, ex->params[p].default_value,
               ex->params[p].help);
}

int cli_list(int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        if (c != 'h')
            return cli_option_error("list", c, argv, longopts);
        fputs(list_help, stdout);
        return CLI_EXIT_OK;
    }
    int n;
    const ex_example *const *all = ex_registry(&n);
    if (optind + 1 < argc)
        return cli_usage_error("list", "unexpected argument '%s'", argv[optind + 1]);
    if (optind < argc) {
        const ex_example *ex = ex_find(argv[optind]);
        if (!ex) {
            const char *names[64];
            for (int i = 0; i < n && i < 64; i++)
                names[i] = all[i]->name;
            const char *best = cli_suggest(argv[optind], names, n < 64 ? n : 64);
            return best ? cli_usage_error("list", "no example '%s' (did you mean %s?)",
                                          argv[optind], best)
                        : cli_usage_error("list", "no example '%s'", argv[optind]);
        }
        print_example(ex);
        return CLI_EXIT_OK;
    }
    for (int i = 0; i < n; i++)
        print_example(all[i]);
    return CLI_EXIT_OK;
}
