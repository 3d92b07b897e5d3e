/* The archive reader (tools/cache_archive_read.h). Trusts nothing it reads. */
#include "tools/cache_archive_read.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

uint32_t
archive_crc32(uint32_t crc, const void *data, size_t len)
{
  static uint32_t table[256];
  if (!table[1])
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++)
        c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
  const uint8_t *p = data;
  crc = ~crc;
  for (size_t i = 0; i < len; i++)
    crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

static uint32_t
get_u32(const uint8_t *p)
{
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

static uint64_t
get_u64(const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* Reads exactly n bytes: 0, or -1 at a short read. */
static int
rd(FILE *f, void *p, size_t n, uint32_t *crc)
{
  if (fread(p, 1, n, f) != n)
    return -1;
  if (crc)
    *crc = archive_crc32(*crc, p, n);
  return 0;
}

static int __attribute__((format(printf, 3, 4)))
fail(char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

int
archive_read(FILE *f, uint64_t file_size, archive_record_fn fn, void *user, uint64_t *records,
             char *err, size_t errlen)
{
  uint32_t crc = 0;
  uint8_t hdr[ARCHIVE_HEADER];
  *records = 0;
  if (rd(f, hdr, sizeof hdr, &crc) != 0 || memcmp(hdr, ARCHIVE_MAGIC, 8) != 0)
    return fail(err, errlen, " is not a kiln cache archive (no KILNCARC header)");
  if (get_u32(hdr + 8) != ARCHIVE_VERSION || get_u32(hdr + 12) != 0)
    return fail(err, errlen,
                ": archive version %u, flags 0x%x: this kiln reads version %u, flags 0",
                get_u32(hdr + 8), get_u32(hdr + 12), ARCHIVE_VERSION);
  uint64_t offset = sizeof hdr;
  for (;;) {
    uint8_t rec[16];
    unsigned long long at = (unsigned long long)offset, nth = (unsigned long long)*records + 1;
    if (rd(f, rec, 8, &crc) != 0)
      return fail(err, errlen, " is truncated at byte %llu (no trailer)", at);
    if (memcmp(rec, ARCHIVE_END, 8) == 0) {
      uint8_t end[12];
      uint32_t before = 0;
      if (rd(f, end, 8, &crc) != 0 || (before = crc, rd(f, end + 8, 4, NULL) != 0))
        return fail(err, errlen, " is truncated in its trailer");
      if (get_u64(end) != *records)
        return fail(err, errlen, ": the trailer counts %llu entries, the archive holds %llu",
                    (unsigned long long)get_u64(end), (unsigned long long)*records);
      if (get_u32(end + 8) != before)
        return fail(err, errlen, ": archive checksum mismatch (the file is damaged)");
      if (fgetc(f) != EOF)
        return fail(err, errlen, " has bytes after its trailer");
      return 0;
    }
    if (rd(f, rec + 8, 8, &crc) != 0)
      return fail(err, errlen, " is truncated at byte %llu", at);
    uint64_t len = get_u64(rec);
    if (len == 0 || len > ARCHIVE_MAX_RECORD || get_u32(rec + 12) != 0)
      return fail(err, errlen,
                  ": record %llu at byte %llu has a bad length (%llu) or reserved field", nth, at,
                  (unsigned long long)len);
    /* Checked against the file's size before allocating: a length field alone buys no memory. */
    if (offset + 16 > file_size || len > file_size - offset - 16)
      return fail(err, errlen, " is truncated in record %llu (at byte %llu, %llu bytes announced)",
                  nth, at, (unsigned long long)len);
    uint8_t *data = malloc((size_t)len);
    if (!data)
      return fail(err, errlen, ": out of memory reading record %llu", nth);
    int r = 0;
    if (rd(f, data, (size_t)len, &crc) != 0)
      r = fail(err, errlen, " is truncated in record %llu", nth);
    else if (archive_crc32(0, data, (size_t)len) != get_u32(rec + 8))
      r = fail(err, errlen, ": record %llu at byte %llu fails its checksum (the file is damaged)",
               nth, at);
    else if (fn && fn(data, (size_t)len, *records, user) != 0)
      r = fail(err, errlen, ": stopped at record %llu", nth);
    free(data);
    if (r)
      return r;
    offset += 16 + len;
    (*records)++;
  }
}
