/* The callable's integrity check: CRC32C (Castagnoli, reflected 0x82F63B78)
 * over the whole blob, the header's checksum field left out. A CRC detects
 * every single-bit flip and every burst up to 32 bits at any length, and a
 * random corruption with probability 1 - 2^-32; it is not a signature (a
 * deliberate forger can recompute it). Byte-table implementation: a blob is
 * checked once per registration, ~1 ms per MiB. */
#include <pthread.h>
#include <stddef.h>

#include "simpler/callable.h"

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int b = 0; b < 8; b++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        table[i] = c;
    }
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        crc = (crc >> 8) ^ table[(crc ^ p[i]) & 0xffu];
    return crc;
}

SP_EXPORT uint32_t sp_callable_checksum(const void *blob, size_t size)
{
    pthread_once(&table_once, table_init);
    const uint8_t *p = blob;
    if (!p)
        return 0;
    const size_t at = offsetof(sp_callable_header, checksum);
    const size_t len = sizeof(((sp_callable_header *)0)->checksum);
    uint32_t crc = 0xffffffffu;
    if (size < SP_CALLABLE_HEADER_V2_BYTES) /* no whole header of any version */
        return ~crc_update(crc, p, size);
    crc = crc_update(crc, p, at);
    crc = crc_update(crc, p + at + len, size - at - len);
    return ~crc;
}
