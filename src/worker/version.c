/* The release and ABI version of the libsimpler.so actually loaded, so a
 * program can tell its headers (simpler/version.h) from the library it
 * runs against. */
#include "simpler/version.h"

SP_EXPORT const char *sp_version(void)
{
    return SIMPLER_VERSION_STRING;
}

SP_EXPORT int sp_abi_version(void)
{
    return SIMPLER_ABI_VERSION;
}
