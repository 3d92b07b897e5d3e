/* The part every fuzz replay driver shares: feeding each checked-in corpus file to the target,
 * the command line, the mutations' random stream, writing seed files. */
#ifndef KILN_TESTS_REPLAY_CORPUS_H
#define KILN_TESTS_REPLAY_CORPUS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Runs LLVMFuzzerTestOneInput on every file of dir (dot files skipped, the
 * first MiB of each). Returns the number of files, or -1 with the cause on
 * stderr when dir cannot be read or holds fewer than min_files files (the
 * seeds are missing).
 */
int replay_corpus(const char *dir, int min_files);

/*
 * A driver's command line, after seeding replay_next with seed: `DRIVER --write-corpus DIR`
 * writes the seeds (write_corpus); `DRIVER CORPUS_DIR [MUTATIONS]` replays the corpus
 * (replay_corpus with min_files), then the driver goes on with *mutations mutations (5000
 * unless given) and *files corpus files. Returns -1 to go on, else the driver's exit status.
 */
int replay_start(int argc, char **argv, int (*write_corpus)(const char *dir), int min_files,
                 uint64_t seed, long *mutations, int *files);

/* The next value of the driver's xorshift64 stream (the mutations' randomness). */
uint64_t replay_next(void);

/* Writes n bytes of data to path; 0, or -1 with the cause on stderr. */
int replay_write(const char *path, const void *data, size_t n);

/* replay_write of dir/name (a corpus seed). */
int replay_write_seed(const char *dir, const char *name, const void *data, size_t n);

#endif
