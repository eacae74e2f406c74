/* Callables: one self-contained, versioned, position-independent blob that
 * bundles an orchestration binary (+ entry and optional config name) and
 * each kernel binary (+ entry, func_id, core type, argument signature).
 * A blob is untrusted input: sp_callable_validate refuses every malformed
 * one with SP_EBLOB and a message, never a crash.
 *
 * Layout (little-endian, all offsets from the blob start):
 *   sp_callable_header | sp_callable_kernel[kernel_count] | sections...
 * Sections (orchestration binary, kernel binaries, string table) must lie
 * inside the blob, be non-empty and not overlap each other or the
 * header/table; the builder starts each on a 64-byte boundary. String fields
 * are offsets into the string table of NUL-terminated strings; entry and
 * config names are C identifiers (1..255 chars).
 *
 * Integrity: the header's `checksum` is the CRC32C of every byte of the blob
 * except the checksum field itself (sp_callable_checksum), written by the
 * builder and checked by the validator, so a blob with any bit flipped is
 * SP_EBLOB, never a callable that runs with wrong code or fields. Version 2
 * added it (version 1 had a zero `reserved` word there).
 *
 * Version 3 (this builder's) appends `orch_args` to the header (80 bytes):
 * the string offset of the orchestration's argument signature (below), or
 * SP_CALLABLE_NO_STRING. Version 2 blobs (72-byte header, no signature)
 * still validate; their view has orch_args NULL. */
#ifndef SIMPLER_CALLABLE_H
#define SIMPLER_CALLABLE_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/export.h"
#include "simpler/types.h"

#define SP_CALLABLE_MAGIC 0x4c4c414352504d53ull /* "SMPRCALL" */
#define SP_CALLABLE_VERSION 3u
#define SP_CALLABLE_VERSION_MIN 2u /* oldest version the validator accepts */
#define SP_CALLABLE_MAX_KERNELS 1024u
#define SP_CALLABLE_NO_STRING 0xffffffffu

typedef struct sp_callable_section {
    uint64_t offset;
    uint64_t size;
} sp_callable_section;

typedef struct sp_callable_header {
    uint64_t magic;
    uint32_t version;
    uint32_t header_bytes; /* sizeof(sp_callable_header) */
    uint64_t total_bytes;  /* the whole blob */
    uint32_t kernel_count;
    uint32_t orch_entry;         /* string offset of the entry symbol */
    uint32_t orch_config;        /* string offset of the config symbol, or SP_CALLABLE_NO_STRING */
    uint32_t checksum;           /* CRC32C of the blob, this field excluded */
    sp_callable_section orch;    /* orchestration shared object */
    sp_callable_section strings; /* NUL-terminated strings */
    /* Version 3 on (a v2 header ends before these; never read them there). */
    uint32_t orch_args; /* string offset of the argument signature, or SP_CALLABLE_NO_STRING */
    uint32_t reserved;  /* 0 */
} sp_callable_header;

_Static_assert(sizeof(sp_callable_header) == 80, "the v3 callable header is 80 bytes");
#define SP_CALLABLE_HEADER_V2_BYTES 72u

/* Argument signature characters, one per kernel argument in order:
 * 'i' IN, 'o' OUT, 'x' INOUT, 'e' OUT_EXISTING, 'n' NO_DEP, 's' scalar.
 * An empty signature means "not checked". */
typedef struct sp_callable_kernel {
    int32_t func_id;            /* >= 0, unique within the callable */
    uint32_t core_type;         /* sp_core_type */
    uint32_t entry;             /* string offset of the kernel symbol */
    uint32_t signature;         /* string offset of the signature */
    sp_callable_section binary; /* kernel shared object */
} sp_callable_kernel;

_Static_assert(sizeof(sp_callable_kernel) == 32, "a v2 kernel table entry is 32 bytes");

/* A validated blob, pointing into the caller's bytes. */
typedef struct sp_callable_view {
    const uint8_t *base;
    size_t size;
    const sp_callable_header *header;
    const sp_callable_kernel *kernels;
    const char *orch_entry;
    const char *orch_config; /* NULL if none */
    const char *orch_args;   /* the argument signature text; NULL if none (or v2) */
} sp_callable_view;

/* Check every field, offset and string of `blob`; fill `view` (may be NULL)
 * on success. Returns 0, or SP_EBLOB (malformed) / SP_EINVAL (NULL or not
 * 8-byte aligned `blob`) with the reason written to `err` (may be NULL). */
SP_EXPORT int sp_callable_validate(const void *blob, size_t size, sp_callable_view *view, char *err,
                                   size_t err_len);
/* CRC32C (Castagnoli) of the `size` bytes at `blob`, with the 4 bytes of
 * the header's checksum field taken as absent; what the builder stores
 * there. `size` below the v2 header size (72 bytes): the CRC of all the bytes. */
SP_EXPORT uint32_t sp_callable_checksum(const void *blob, size_t size);
/* String at offset `off` of a validated blob's string table; NULL if out of range. */
SP_EXPORT const char *sp_callable_string(const sp_callable_view *view, uint32_t off);
/* Index of the kernel with `func_id` in a validated blob, or -1. Kernel
 * entry and signature offsets of a validated blob always resolve. */
SP_EXPORT int sp_callable_find_kernel(const sp_callable_view *view, int32_t func_id);

/* What the builder packs for one kernel. */
typedef struct sp_callable_kernel_spec {
    int32_t func_id;
    uint32_t core_type; /* sp_core_type */
    const char *path;   /* shared object file (builder from files) */
    const void *bytes;  /* or its bytes in memory (path == NULL) */
    size_t size;
    const char *entry;     /* symbol name */
    const char *signature; /* NULL or "" = unchecked */
} sp_callable_kernel_spec;

typedef struct sp_callable_spec {
    const char *orch_path;  /* orchestration shared object file */
    const void *orch_bytes; /* or its bytes (orch_path == NULL) */
    size_t orch_size;
    const char *orch_entry;
    const char *orch_config; /* NULL: none */
    const char *orch_args;   /* argument signature text (below); NULL or "": none */
    const sp_callable_kernel_spec *kernels;
    uint32_t kernel_count;
} sp_callable_spec;

/* Pack `spec` into a new blob (*blob_out, free() it). Returns 0, or a status
 * (SP_EINVAL for a NULL or invalid field or an orch_args that does not
 * parse, SP_ESYS for an unreadable file, SP_EBLOB for a duplicate func_id,
 * SP_EKERNEL_LOAD for a binary that is not a well-formed ELF shared object
 * for this machine: truncated, or a header, program header, dynamic section
 * or section table that points outside it; SP_EMODULE_SYMBOL for an entry
 * or config that its binary does not export as a function: absent from its
 * .dynsym, undefined there, local, hidden, or data) with the reason, naming
 * the symbol and the file, in `err`. */
SP_EXPORT int sp_callable_build(const sp_callable_spec *spec, void **blob_out, size_t *size_out,
                                char *err, size_t err_len);

/* The C header an orchestration of `spec` includes, as text (*text_out,
 * NUL-terminated, free() it; *len_out its length, may be NULL): a
 * `#define SP_FUNC_<entry> <func_id>` per kernel (each kernel's entry is
 * its name) and, when spec->orch_args declares a signature, SP_ARG_COUNT,
 * SP_SCALAR_COUNT and `SP_ARG_<name>` / `SP_SCALAR_<name>` with each
 * argument's index. `name` (e.g. the header's file name) makes its include
 * guard. Only the kernels' func_id and entry and orch_args are read.
 * 0, or SP_EINVAL (a name that is not a C identifier, a func_id or name
 * given twice, a signature that does not parse) / SP_ENOMEM with the
 * reason in `err`. What `simpler pack --header` writes. */
SP_EXPORT int sp_callable_header_text(const sp_callable_spec *spec, const char *name,
                                      char **text_out, size_t *len_out, char *err, size_t err_len);

/* ---- the orchestration's argument signature ---------------------------------
 * What a callable says about the arguments of a run, so tools (simpler run
 * FILE.spc, the Python binding) can name, check and create them and the
 * worker can refuse a mismatching run by name (SP_EARG_SIGNATURE) before
 * anything is staged. Text form, one entry per argument, comma separated,
 * tensors first (in sp_args.tensors order), then scalars:
 *
 *   tensor:  NAME:DIR:DTYPE[DIMS]    DIR  in | out | inout | out_existing | no_dep
 *                                    DTYPE f32 f16 bf16 f64 i8 u8 i16 u16 i32 u32
 *                                          i64 u64 bool, or any
 *                                    [DIMS] optional (absent: any rank); each
 *                                          dim is a number > 0, a symbol (a C
 *                                          identifier: every use of one symbol in
 *                                          a run must have the same extent) or *
 *   scalar:  NAME:scalar[:DTYPE]     DTYPE of the 64-bit word: i64 (default),
 *                                          u64, f64 (bits of a double), f32, bool
 *
 *   e.g.  "x:in:f32[n],y:in:f32[n],z:out:f32[n],tile:scalar"
 *
 * NAME is a C identifier of 1..63 characters, unique among the entries.
 * Whitespace around entries and fields is ignored. */

#define SP_CALLABLE_ARG_NAME_MAX 64u
#define SP_CALLABLE_DIM_ANY 0      /* sp_callable_arg.dims[i]: any extent */
#define SP_CALLABLE_DTYPE_ANY 0xff /* sp_callable_arg.dtype: any dtype */

typedef enum sp_callable_arg_kind {
    SP_CALLABLE_ARG_TENSOR = 1,
    SP_CALLABLE_ARG_SCALAR = 2,
} sp_callable_arg_kind;

typedef struct sp_callable_arg {
    char name[SP_CALLABLE_ARG_NAME_MAX];
    uint8_t kind;  /* sp_callable_arg_kind */
    uint8_t dir;   /* tensors: sp_dir; scalars: 0 */
    uint8_t dtype; /* sp_dtype, or SP_CALLABLE_DTYPE_ANY; scalars: I64 U64 F64 F32 BOOL */
    int8_t ndim;   /* tensors: rank, or -1 for any rank; scalars: 0 */
    uint32_t reserved;
    /* Per dim: > 0 a fixed extent, SP_CALLABLE_DIM_ANY, or -(k + 1) for
     * symbol k (its name: dim_symbols[k] of the parsed signature). */
    int64_t dims[SP_MAX_DIMS];
} sp_callable_arg;

#define SP_CALLABLE_MAX_SYMBOLS 16u

/* A parsed signature: the arguments in order and the dim symbols' names. */
typedef struct sp_callable_signature {
    uint32_t tensor_count, scalar_count;
    uint32_t symbol_count;
    uint32_t reserved;
    sp_callable_arg tensors[SP_MAX_RUN_TENSORS];
    sp_callable_arg scalars[SP_MAX_RUN_SCALARS];
    char symbols[SP_CALLABLE_MAX_SYMBOLS][SP_CALLABLE_ARG_NAME_MAX];
} sp_callable_signature;

/* Parse signature text into `out`. 0, or SP_EINVAL with the reason (the
 * entry and field) in `err`. The builder stores only text that parses. */
SP_EXPORT int sp_callable_parse_signature(const char *text, sp_callable_signature *out, char *err,
                                          size_t err_len);
/* Check a run's arguments against a parsed signature: counts, each
 * tensor's direction, dtype, rank and extents, and every symbol bound to
 * one extent across the run. 0, or SP_EARG_SIGNATURE with the argument
 * named in `err` ("argument 'y': dtype f16, the callable declares f32"). */
SP_EXPORT int sp_callable_check_args(const sp_callable_signature *sig, const sp_args *args,
                                     char *err, size_t err_len);

#endif
