/* Versions: the release, libsimpler's ABI (the major of its SONAME,
 * libsimpler.so.<SIMPLER_ABI_VERSION>: bumped on any incompatible change
 * of a public header or exported function), and the versions of the
 * formats and interfaces it speaks (module ABI, orchestration ABI, callable
 * blob). CMake reads SIMPLER_VERSION_* and SIMPLER_ABI_VERSION from this
 * file: it is the one place they are written. */
#ifndef SIMPLER_VERSION_H
#define SIMPLER_VERSION_H

#include "simpler/export.h"

#define SIMPLER_VERSION_MAJOR 0
#define SIMPLER_VERSION_MINOR 2
#define SIMPLER_VERSION_PATCH 0
#define SIMPLER_VERSION_STRING "0.2.0"
#define SIMPLER_ABI_VERSION 1

/* The release of the libsimpler.so actually loaded ("0.2.0"), and its ABI
 * version: compare with the macros above to detect a header/library
 * mismatch at run time. */
SP_EXPORT const char *sp_version(void);
SP_EXPORT int sp_abi_version(void);

#endif
