/* Symbol visibility: everything is hidden unless marked SP_EXPORT. */
#ifndef SIMPLER_EXPORT_H
#define SIMPLER_EXPORT_H

#if defined(__GNUC__)
#define SP_EXPORT __attribute__((visibility("default")))
#else
#define SP_EXPORT
#endif

#endif
