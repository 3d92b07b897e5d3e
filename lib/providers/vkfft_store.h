/* VkFFT binary store (vkfft_store.c): internal, also used by tests/unit/test_vkfft_store.c. */
#ifndef KILN_PROVIDERS_VKFFT_STORE_H
#define KILN_PROVIDERS_VKFFT_STORE_H

#include <stddef.h>
#include <stdint.h>

/* Version of the entry layout; part of every key, so a change makes old entries misses. */
#define KILN__VKFFT_STORE_FORMAT 1u

/* Path of key's entry in <kiln cache>/vkfft (created when create_dir); -1 without a cache dir. */
int kiln__vkfft_store_path(const char *key, char *path, size_t len, int create_dir);

/*
 * The payload stored for key (malloc'ed; *size set), or NULL on a miss. An
 * entry whose magic, format, key or checksum differs, or that is cut short,
 * is a miss.
 */
char *kiln__vkfft_store_read(const char *key, uint64_t *size);

/* Publishes payload for key atomically; 0 on success. */
int kiln__vkfft_store_write(const char *key, const void *payload, uint64_t size);

/* Removes key's entry (no error if absent). */
void kiln__vkfft_store_remove(const char *key);

/*
 * Whether a VkFFT 1.2.26 application string will load the way it was saved
 * (every record "<size>\n" plus size-1 bytes without NUL, then zero padding).
 */
int kiln__vkfft_blob_intact(const char *blob, uint64_t size);

#endif
