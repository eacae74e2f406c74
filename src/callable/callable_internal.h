/* Internals of the callable library. The field rules (names, signatures,
 * core types) are shared by the builder, which refuses bad specs up front,
 * and the validator, which refuses bad blobs: one place, so the two can
 * never disagree. */
#ifndef SP_CALLABLE_INTERNAL_H
#define SP_CALLABLE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest entry / config symbol name accepted (excluding the NUL). */
#define SP_CALLABLE_MAX_NAME 255u

/* Reason `name` (len bytes, no NUL inside) is not a valid symbol name, or
 * NULL if it is one: non-empty, at most SP_CALLABLE_MAX_NAME, a C identifier. */
const char *callable_name_problem(const char *name, size_t len);

/* Reason `sig` (len bytes) is not a valid argument signature, or NULL. On a
 * bad character, *bad_index says where. */
const char *callable_signature_problem(const char *sig, size_t len, size_t *bad_index);

/* True for SP_CORE_AIC and SP_CORE_AIV. */
bool callable_core_type_valid(uint32_t core_type);

/* "aic" / "aiv" / "?". */
const char *callable_core_type_name(uint32_t core_type);

/* Copy up to 64 characters of `s` into buf for a message, with every
 * non-printable byte shown as '?': untrusted names never reach a terminal raw. */
const char *callable_printable(const char *s, char *buf, size_t len);

/* Write a printf-style reason to err (if err_len > 0) and return status. */
int callable_fail(char *err, size_t err_len, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Read the whole file at `path` into a new buffer (*out, free() it).
 * Returns 0, or SP_ESYS / SP_ENOMEM with "<what> '<path>': <strerror>" in err. */
int callable_read_file(const char *path, const char *what, void **out, size_t *size, char *err,
                       size_t err_len);

#endif
