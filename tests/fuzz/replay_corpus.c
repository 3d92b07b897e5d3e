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
