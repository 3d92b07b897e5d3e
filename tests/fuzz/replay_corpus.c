#include "replay_corpus.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
replay_corpus(const char *dir, int min_files)
{
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "%s: %s\n", dir, strerror(errno));
    return -1;
  }
  int files = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.')
      continue;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    FILE *f = fopen(path, "rb");
    if (!f)
      continue;
    uint8_t *buf = malloc(1 << 20);
    if (!buf) {
      fclose(f);
      closedir(d);
      fprintf(stderr, "out of memory\n");
      return -1;
    }
    size_t n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    files++;
  }
  closedir(d);
  if (files < min_files) {
    fprintf(stderr, "corpus %s has %d files, expected the checked-in seeds\n", dir, files);
    return -1;
  }
  return files;
}

static uint64_t rng;

int
replay_start(int argc, char **argv, int (*write_corpus)(const char *dir), int min_files,
             uint64_t seed, long *mutations, int *files)
{
  rng = seed;
  if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
    return write_corpus(argv[2]);
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR [MUTATIONS]\n", argv[0]);
    return 2;
  }
  *mutations = argc > 2 ? strtol(argv[2], NULL, 10) : 5000;
  *files = replay_corpus(argv[1], min_files);
  return *files < 0 ? 1 : -1;
}

uint64_t
replay_next(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

int
replay_write(const char *path, const void *data, size_t n)
{
  FILE *f = fopen(path, "wb");
  int bad = !f || fwrite(data, 1, n, f) != n;
  if (f && fclose(f) != 0)
    bad = 1;
  if (bad) {
    perror(path);
    return -1;
  }
  return 0;
}

int
replay_write_seed(const char *dir, const char *name, const void *data, size_t n)
{
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return replay_write(path, data, n);
}
