/* simpler-load-probe: registration's throw-away process
 * (common/load_probe.h). Started by sp__load_probe with the packed items on
 * descriptor argv[1] and the report pipe on argv[2]; not a command for
 * people. */
#include <stdio.h>
#include <stdlib.h>

#include "common/load_probe.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr,
                "%s: started by libsimpler's registration (items descriptor, report "
                "descriptor), not by hand\n",
                argc ? argv[0] : SP_LOAD_PROBE_HELPER);
        return 2;
    }
    sp__load_probe_serve(atoi(argv[1]), atoi(argv[2]));
}
