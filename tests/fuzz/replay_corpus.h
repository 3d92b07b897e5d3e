/* The part every fuzz replay driver shares: feeding each checked-in corpus file to the target. */
#ifndef KILN_TESTS_REPLAY_CORPUS_H
#define KILN_TESTS_REPLAY_CORPUS_H

/*
 * Runs LLVMFuzzerTestOneInput on every file of dir (dot files skipped, the
 * first MiB of each). Returns the number of files, or -1 with the cause on
 * stderr when dir cannot be read or holds fewer than min_files files (the
 * seeds are missing).
 */
int replay_corpus(const char *dir, int min_files);

#endif
