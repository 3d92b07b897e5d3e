/*
 * A small streaming JSON writer for the kiln tool's --json output.
 *
 * Values are written as they come, with commas and two-space indentation
 * handled here. Strings are escaped per RFC 8259: quote, backslash and
 * control characters are escaped, and bytes that are not valid UTF-8 become
 * U+FFFD, so any C string (device names, paths) yields a valid document.
 *
 * In an object every value needs a key; in an array (and at the top level)
 * the key must be NULL. Nesting is limited to JSON_MAX_DEPTH levels; deeper
 * values are not written and json_end() reports the misuse.
 */
#ifndef KILN_TOOLS_JSON_H
#define KILN_TOOLS_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
  FILE *f;
  int depth;
  int count[JSON_MAX_DEPTH]; /* values written so far at each level */
  int bad;                   /* misuse seen (too deep, unbalanced end) */
};

void json_init(struct json *j, FILE *f);
void json_object_begin(struct json *j, const char *key);
void json_object_end(struct json *j);
void json_array_begin(struct json *j, const char *key);
void json_array_end(struct json *j);
void json_string(struct json *j, const char *key, const char *value); /* NULL writes null */
void json_u64(struct json *j, const char *key, uint64_t value);
void json_i64(struct json *j, const char *key, int64_t value);
void json_double(struct json *j, const char *key, double value); /* NaN/inf write null */
void json_bool(struct json *j, const char *key, int value);
void json_null(struct json *j, const char *key);

/* Ends the document with a newline; 0, or -1 if it was not balanced or a write failed. */
int json_end(struct json *j);

/* Writes s as a JSON string literal (quotes included) to f. */
void json_write_string(FILE *f, const char *s);

#endif
