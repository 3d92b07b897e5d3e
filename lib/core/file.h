/*
 * Opening files whose paths come from the caller, the environment or a shared
 * directory (no OpenCL; POSIX only, so the kiln tool compiles it too).
 */
#ifndef KILN_CORE_FILE_H
#define KILN_CORE_FILE_H

#include <sys/stat.h>
#include <sys/types.h>

/*
 * Opens path with oflags (O_RDONLY, O_RDWR | O_CREAT, ...; add O_NOFOLLOW for
 * files kiln owns) and keeps the descriptor only for a regular file. The open
 * itself never blocks: a FIFO, a terminal or a device in the file's place
 * would otherwise hang the caller in open() or in the first read, and none
 * of them is a file kiln wrote or can parse. O_CLOEXEC is added; the
 * descriptor is returned in blocking mode.
 *
 * Returns the descriptor (st, when not NULL, holds its fstat), or -1 with
 * errno set and *why (when why is not NULL) naming the problem in words that
 * follow "<path>: ": "the file does not exist" (ENOENT), "... is a symbolic
 * link" (ELOOP under O_NOFOLLOW), "... is a directory" (EISDIR), "... is not
 * a regular file (a FIFO, socket or device)" (EINVAL or ENXIO), "the file
 * cannot be opened" (errno says why).
 */
int kiln__open_regular(const char *path, int oflags, mode_t mode, struct stat *st,
                       const char **why);

#endif
