/* Log levels and the sink type: a host (or the worker, for a module it
 * loads) installs a sink to receive simpler's formatted log lines. The one
 * sink type of the tree: common's logger and the module ABI's
 * simpler_bind_logging both take it. */
#ifndef SIMPLER_LOG_H
#define SIMPLER_LOG_H

enum { SP_LOG_DEBUG = 0, SP_LOG_INFO = 1, SP_LOG_WARN = 2, SP_LOG_ERROR = 3, SP_LOG_OFF = 4 };

/* One formatted line ("simpler warn: ...", no newline) at `level`. */
typedef void (*sp_log_sink)(int level, const char *line, void *user);

#endif
