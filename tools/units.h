/* Human-readable sizes, ages and dates for the kiln tool, and the parsers for SIZE and AGE
 * arguments. */
#ifndef KILN_TOOLS_UNITS_H
#define KILN_TOOLS_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* "512 B", "1.5 KiB", "12.3 MiB", "1.0 GiB" (powers of 1024). Returns buf. */
const char *units_size(uint64_t bytes, char *buf, size_t len);

/* How long before now t was, in words: "just now", "5 seconds ago", "1 hour ago",
   "3 days ago", "2 weeks ago", "4 months ago", "2 years ago", "in the future". Returns buf. */
const char *units_age(int64_t t, int64_t now, char *buf, size_t len);

/* Local date and time, "2024-05-01 13:45:07"; "-" for 0. Returns buf. */
const char *units_date(int64_t t, char *buf, size_t len);

/*
 * Parses a size: a number (fractions allowed, e.g. 1.5G) with an optional
 * K, M, G or T suffix (powers of 1024, case-insensitive, optionally followed
 * by "iB" or "B"); no suffix means bytes. Returns 0, or -1 if malformed or
 * too large.
 */
int units_parse_size(const char *s, uint64_t *out);

/*
 * Parses an age: one or more <integer><unit> parts, unit s, m, h, d or w
 * (seconds to weeks), e.g. "7d", "12h", "1d12h", "30m". Returns 0, or -1 if
 * malformed or longer than 100 years.
 */
int units_parse_age(const char *s, int64_t *seconds);

#endif
