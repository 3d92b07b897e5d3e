#include "core/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char not_regular[] = "the file is not a regular file (a FIFO, socket or device)";

int
kiln__open_regular(const char *path, int oflags, mode_t mode, struct stat *st, const char **why)
{
  const char *unused;
  if (!why)
    why = &unused;
  int fd = open(path, oflags | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0) {
    int e = errno;
    if (e == ENOENT)
      *why = "the file does not exist";
    else if (e == ELOOP && (oflags & O_NOFOLLOW))
      *why = "the file is a symbolic link";
    else if (e == EISDIR)
      *why = "the file is a directory";
    else if (e == ENXIO) /* a FIFO opened for writing without a reader, a socket */
      *why = not_regular;
    else
      *why = "the file cannot be opened";
    errno = e;
    return -1;
  }
  struct stat buf;
  if (!st)
    st = &buf;
  if (fstat(fd, st) != 0) {
    int e = errno;
    close(fd);
    *why = "the file cannot be opened";
    errno = e;
    return -1;
  }
  if (!S_ISREG(st->st_mode)) {
    int dir = S_ISDIR(st->st_mode);
    close(fd);
    *why = dir ? "the file is a directory" : not_regular;
    errno = dir ? EISDIR : EINVAL;
    return -1;
  }
  /* Linux ignores O_NONBLOCK on regular files, but POSIX leaves its effect unspecified. */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

const char *
kiln__replace_target(const char *path, char *buf, size_t cap, const char **why)
{
  struct stat st, lst;
  if (stat(path, &st) != 0)
    return path; /* nothing there (or a dangling link, which the rename replaces) */
  if (!S_ISREG(st.st_mode)) {
    *why = S_ISDIR(st.st_mode) ? "the file is not a regular file (a directory)" : not_regular;
    return NULL;
  }
  if (lstat(path, &lst) != 0 || !S_ISLNK(lst.st_mode))
    return path;
  char full[PATH_MAX];
  if (!realpath(path, full) || strlen(full) >= cap) {
    *why = "the symbolic link cannot be resolved";
    return NULL;
  }
  memcpy(buf, full, strlen(full) + 1);
  return buf;
}
