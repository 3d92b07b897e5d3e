/*
 * Shared helpers for the Check suites.
 *
 * Device suites run with CK_FORK=no (set in tests/meson.build): OpenCL
 * implementations start threads, and forking after that is unsafe. Each
 * suite binary calls harness_main(), which exits 77 (meson: skipped) when no
 * OpenCL device exists, points KILN_CACHE_DIR at a fresh temp directory and
 * runs the suite.
 *
 * KILN_TEST_SMALL=1 selects the small mode, for running the suites under a
 * simulator such as oclgrind (meson suite `oclgrind`): each family registers
 * only the tests that exercise every kernel on small inputs, and sized cases
 * above HARNESS_SMALL_NUMEL elements are skipped (harness_fits) or run at a
 * smaller stand-in size (harness_size).
 */
#ifndef KILN_TESTS_HARNESS_H
#define KILN_TESTS_HARNESS_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln.h"

/*
 * ck_assert_msg (and every ck_assert_* built on it) marks a checkpoint on each call that
 * passes; with CK_FORK=no that is a write to Check's message file, so loops that assert on
 * every element spent most of their time in the kernel (test_elementwise's flat shapes: 101 of
 * the suite's 146 s with warm caches, 22 s of it system time). Checkpoints only tell a forked
 * run where a child that died had got to, so they are marked in forked runs only
 * (harness_mark_point); a failure still reports its file and line.
 */
#undef ck_assert_msg
#define ck_assert_msg(expr, ...)                   \
  ((expr) ? harness_mark_point(__FILE__, __LINE__) \
          : _ck_assert_failed(__FILE__, __LINE__, "Assertion '" #expr "' failed", __VA_ARGS__))

/* Check's _mark_point when the suite runs its tests in forked children, else nothing. */
void harness_mark_point(const char *file, int line);

/* Fails the test with kiln's last error message when call does not return KILN_OK. */
#define KOK(call)                                                                          \
  do {                                                                                     \
    kiln_status kok_s_ = (call);                                                           \
    ck_assert_msg(kok_s_ == KILN_OK, "%s returned %s: %s", #call, kiln_status_name(kok_s_), \
                  kiln_last_error());                                                      \
  } while (0)

/* Expects a specific status and a non-empty message naming the failed operation. */
#define KEXPECT(call, status)                                                              \
  do {                                                                                     \
    kiln_status ke_s_ = (call);                                                            \
    ck_assert_msg(ke_s_ == (status), "%s returned %s, expected %s (%s)", #call,            \
                  kiln_status_name(ke_s_), kiln_status_name(status), kiln_last_error());   \
    ck_assert_msg(kiln_last_error()[0] != 0, "%s left no error message", #call);           \
  } while (0)

/* The context shared by the tests of one suite binary (created on first use). */
kiln_context *harness_ctx(void);

/* Nonzero if the harness context's device supports f64. */
int harness_has_fp64(void);

/* A fresh temporary directory (mkdtemp under $TMPDIR or /tmp); never NULL; the caller frees. */
char *harness_tempdir(void);

/* Removes a directory tree (best effort). */
void harness_rmtree(const char *path);

/* Largest case, in elements, that runs in the small mode. */
#define HARNESS_SMALL_NUMEL 1500

/* Nonzero in the small mode (KILN_TEST_SMALL set to anything but "" or "0"). */
int harness_small(void);

/* Nonzero when a case of numel elements runs: always, except above HARNESS_SMALL_NUMEL in the
 * small mode. */
int harness_fits(uint64_t numel);

/* normal, or small in the small mode: the size of a case that has a small stand-in. */
int64_t harness_size(int64_t normal, int64_t small);

/*
 * Aliasing tests (docs/ops.md, "Aliasing"): an input and an output wrapped
 * over one new buffer, their first bytes shift bytes apart (the output
 * first with out_first, else the input). The buffer starts zeroed, then the
 * input receives host (its full size). *all (may be NULL) wraps the whole
 * buffer as u8, to check that a refused call left every byte alone. The
 * caller releases the tensors; the buffer goes with the last of them.
 */
void harness_overlap_pair(kiln_dtype in_dt, size_t in_nd, const int64_t *in_shape, const void *host,
                          kiln_dtype out_dt, size_t out_nd, const int64_t *out_shape, size_t shift,
                          int out_first, kiln_tensor **in, kiln_tensor **out, kiln_tensor **all);

/* Downloads a tensor into a fresh malloc'd buffer of its size (at least 1 byte). */
void *harness_download(const kiln_tensor *t);

/* Expects call to be refused with INVALID_ARGUMENT, leaving every byte of the tensor all alone. */
#define KEXPECT_REFUSED_UNTOUCHED(all, call)                            \
  do {                                                                  \
    void *ker_before_ = harness_download(all);                          \
    KEXPECT(call, KILN_ERR_INVALID_ARGUMENT);                           \
    void *ker_after_ = harness_download(all);                           \
    ck_assert_mem_eq(ker_before_, ker_after_, kiln_tensor_nbytes(all)); \
    free(ker_before_);                                                  \
    free(ker_after_);                                                   \
  } while (0)

/*
 * Runs suite: exits 77 if needs_device and no OpenCL device exists, else sets
 * a private KILN_CACHE_DIR and runs all tests, returning the exit status.
 */
int harness_main(Suite *suite, int needs_device);

/*
 * As harness_main(suite, 1), but the test process makes no OpenCL call before its tests: the
 * device check runs in a child process forked first (the tests then see the ICD loader and the
 * platform uninitialised, as a program's first threads do).
 */
int harness_main_cold(Suite *suite);

#endif
