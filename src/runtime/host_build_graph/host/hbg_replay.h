/* host_build_graph's replay across runs (DESIGN §12): a recorded graph is
 * its pristine image (the host bytes as written before the first upload)
 * plus a relocation list, every image word that depends on the run, as
 * (offset, delta) from one of its sources: a staged run argument's device
 * buffer, the bank's heap, the image itself (argument words that point at
 * descriptors) or a data scalar of the run. A replay computes each
 * source's value for the new run and patches only the words whose source
 * moved; the header (kernel table, timeout, trace, counters) is written
 * fresh every launch.
 *
 * Only the patch is uploaded: the record keeps, per device arena bank,
 * what that bank's image holds (the record's tag, which is also written
 * in the image header, the image's address and size, and the source
 * values of the last patch). A bank whose image header still carries the
 * tag at the same address gets the header and the changed words; any other
 * bank gets the whole image once. The device applies the patch and resets
 * what a run moved (task counters, pushed queue slots) at the start of
 * hbg_device_main (hbg_device.c).
 *
 * Not kept (the run goes fresh, SP_CALL_REPLAY_ONLY fails by name): the
 * checking mode (red zones would need refilling), an orchestration that
 * wrote a control tensor (a replay would not write it again), one that
 * read a runtime-allocated tensor or a pure output (nothing the next run's
 * host data can confirm), and a descriptor in no buffer of the run. */
#ifndef SP_RUNTIME_HBG_REPLAY_H
#define SP_RUNTIME_HBG_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/host/graph_cache.h"
#include "runtime/host/host_run.h"
#include "runtime/host_build_graph/host/hbg_build.h"
#include "runtime/host_build_graph/host/hbg_image_write.h"

/* Arena banks a record tracks (a device has this many at most); a run on a
 * bank past them always uploads the whole image. */
#define HBG_REPLAY_BANKS 8u

/* The slot scratch buffer that holds the run's graph key (past the store). */
#define HBG_STORE_KEY HBG_STORE_BUFFERS
_Static_assert(HBG_STORE_KEY < SP_HOST_SCRATCH_SLOT_BUFFERS, "a slot holds the key");

/* What a recording build notes besides the graph (hbg_graph.rec). */
typedef struct hbg_scalar_note {
    uint64_t arg;        /* index into the graph's args[] */
    uint32_t run_scalar; /* its value is args->scalars[run_scalar] */
    uint32_t pad;
} hbg_scalar_note;

typedef struct hbg_recording {
    const rt_loaded_callable *callable;
    const sp_args *args; /* the run's host arguments */
    hbg_scalar_note *scalars;
    uint64_t scalar_count, scalar_cap;
    rt_graph_read *reads;
    uint32_t read_count, read_cap;
    char never[160]; /* why the graph is not kept ("" if it may be) */
} hbg_recording;

/* Source of a relocation: a run argument (0..SP_MAX_RUN_TENSORS-1), the
 * heap, the image, or a run scalar (HBG_SRC_SCALAR + i). */
enum {
    HBG_SRC_HEAP = SP_MAX_RUN_TENSORS,
    HBG_SRC_IMAGE,
    HBG_SRC_SCALAR,
    HBG_SRC_COUNT = HBG_SRC_SCALAR + SP_MAX_RUN_SCALARS,
};

typedef struct hbg_reloc {
    uint64_t off;   /* byte offset of the word in the image */
    uint64_t delta; /* the word is the source's value + delta */
} hbg_reloc;

typedef struct hbg_reloc_group {
    uint32_t src;   /* HBG_SRC_* */
    uint32_t count; /* relocations of this source, from `begin` */
    uint64_t begin;
} hbg_reloc_group;

/* What one bank's image holds of this record. */
typedef struct hbg_bank_view {
    bool valid;
    uint64_t image_dev, image_held; /* the bank's image part when it was written */
} hbg_bank_view;

typedef struct hbg_record {
    uint64_t tag;   /* never 0 (a fresh image's header has 0) */
    uint8_t *image; /* pristine, image_bytes */
    uint64_t image_bytes;
    uint64_t patch_off; /* the patch area, past the image, room for every relocation */
    uint64_t heap_need; /* heap bytes the graph's outputs use */
    uint32_t task_count;
    uint32_t pred_tasks; /* predicated tasks: a replay reads the image's skip count */
    uint64_t edge_count;
    uint64_t trace_slices; /* core executions, for sizing a trace buffer */
    hbg_dep *deps;         /* edges, consumer by consumer (fanin_init each) */
    hbg_reloc *relocs;
    uint64_t reloc_count;
    hbg_reloc_group *groups;
    uint32_t group_count;
    hbg_bank_view bank[HBG_REPLAY_BANKS];
    uint64_t *bank_src; /* [HBG_REPLAY_BANKS][group_count]: source values of each bank's image */
} hbg_record;

/* Notes of a recording build: the task's data scalars that came from the
 * run (scalar_src SP_SCALAR_RUN), its arguments starting at args[arg0];
 * a control element read (buffer index `buf`, -1 for the heap, byte offset
 * from its start, size, value). 0 or SP_ENOMEM. */
int hbg_recording_note_task(hbg_recording *rec, const sp_task *t, uint64_t arg0);
int hbg_recording_note_read(hbg_recording *rec, int buf, uint64_t off, const void *v, size_t bytes);
void hbg_recording_free(hbg_recording *rec);
/* Image bytes past the image a recorded graph's patch area needs. */
uint64_t hbg_replay_patch_bytes(const hbg_graph *g, const hbg_recording *rec);

/* Make the record of the built graph `g` laid out as `l` in the written
 * image `image` (before its upload, its header's tag not yet set), for a
 * run staged as `st` with arena `a` on bank `bank` and host args `args`.
 * The bank's view is set (the upload that follows writes it). 0, SP_ENOMEM,
 * or SP_ENOTSUP with the reason in rec->never. */
int hbg_record_make(hbg_record **out, hbg_recording *rec, const hbg_graph *g, const hbg_layout *l,
                    const uint8_t *image, const rt_staging *st, const sp_arena *a,
                    const sp_args *args, uint32_t bank);
void hbg_record_free(void *record);
/* Host bytes the record holds. */
uint64_t hbg_record_bytes(const hbg_record *rd);
/* The image of `bank` is no longer known to be this record's (a failed run). */
void hbg_record_bank_drop(hbg_record *rd, uint32_t bank);

/* A replay's image: the header written fresh (kernel table, timeout,
 * trace, the patch), and either the changed words or, on a bank that does
 * not hold this record, the whole image, uploaded to the arena `a` of
 * p's bank. `stage` is the slot's host buffer for the header and patch.
 * *uploaded: bytes sent. 0 or a status, reason in p->err. */
int hbg_replay_upload(hbg_record *rd, const rt_prepare *p, const rt_staging *st, const sp_arena *a,
                      uint64_t trace_dev, rt_host_scratch *stage, uint64_t *uploaded);

#endif
