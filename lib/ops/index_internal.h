/*
 * Test hook of the index family (index.c), for the test suite on a CPU device.
 */
#ifndef KILN_OPS_INDEX_INTERNAL_H
#define KILN_OPS_INDEX_INTERNAL_H

#include <stdatomic.h>

/* index_select and embedding: 0 takes the device's form, 1 the GPU form (3-D grid, items
 * along the row), 2 the CPU form (one item per gathered row). */
extern int kiln__index_force_layout;

/* index_select and embedding launches of the CPU form over 64-byte lines (index_select_lines,
 * [0], and its non-temporal variant, [1]) since the process started. */
extern _Atomic unsigned kiln__index_lines_calls[2];

#endif
