/* Sub-commands of the `simpler` command line, one file each. */
#ifndef SP_CLI_COMMANDS_H
#define SP_CLI_COMMANDS_H

int cli_info(int argc, char **argv);
int cli_smoke(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_list(int argc, char **argv);
int cli_pack(int argc, char **argv);

#endif
