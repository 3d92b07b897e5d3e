/*
 * The reader of `kiln cache export` archives (format in docs/cli.md and
 * tools/cache_archive.c), apart from the tool so that the fuzz suite can
 * drive it on its own (tests/fuzz/fuzz_cache_archive.c). It needs neither
 * OpenCL nor libkiln: what is done with each entry is up to the caller.
 */
#ifndef KILN_TOOLS_CACHE_ARCHIVE_READ_H
#define KILN_TOOLS_CACHE_ARCHIVE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ARCHIVE_MAGIC "KILNCARC"
#define ARCHIVE_END "KILNCEND"
#define ARCHIVE_VERSION 1u
#define ARCHIVE_HEADER 24u
/* Largest entry the cache format allows: 1 MiB header + 1 GiB binary + 32-byte MAC. */
#define ARCHIVE_MAX_RECORD ((1ull << 30) + (1ull << 20) + 32u)

/* CRC-32 (IEEE, as zlib's): continue from crc, starting with 0. */
uint32_t archive_crc32(uint32_t crc, const void *data, size_t len);

/*
 * Called for each record whose CRC matched, in order, with its bytes (one
 * entry file) and 0-based index; return 0 to go on, nonzero to stop the
 * read (archive_read then fails with "stopped").
 */
typedef int (*archive_record_fn)(const uint8_t *entry, size_t len, uint64_t index, void *user);

/*
 * Reads a whole archive of file_size bytes from f: header, records (each
 * CRC-checked before fn sees it) and trailer (count and CRC), and checks
 * that the file ends there. Returns 0, or -1 with err set to what is wrong
 * (a phrase to follow the file's name: " is truncated at byte 40", ": the
 * trailer counts 3 entries, the archive holds 2", ...). *records receives
 * the number of records read.
 */
int archive_read(FILE *f, uint64_t file_size, archive_record_fn fn, void *user, uint64_t *records,
                 char *err, size_t errlen);

#endif
