/*
 * Opening files whose paths come from the caller, the environment or a shared
 * directory (no OpenCL; POSIX only, so the fuzz targets compile it alone). The
 * kiln tool may use only the public API (tests/layers), so its archive export
 * and import (tools/cache_archive.c) keep checks of their own.
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

/*
 * The path a file written next to path and renamed into place should replace: path itself
 * when nothing is there or a regular file is, the file a symbolic link names (into buf, cap
 * bytes) so that the link stays a link. NULL, with *why following "<path>: ", where the rename
 * would replace what is not a regular file ("the file is not a regular file (a directory)",
 * "... (a FIFO, socket or device)": a device node, by root) or a link cannot be resolved.
 */
const char *kiln__replace_target(const char *path, char *buf, size_t cap, const char **why);

#endif
