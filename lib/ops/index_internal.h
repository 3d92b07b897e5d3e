/*
 * Test hook of the index family (index.c), for the test suite on a CPU device.
 */
#ifndef KILN_OPS_INDEX_INTERNAL_H
#define KILN_OPS_INDEX_INTERNAL_H

/* index_select and embedding: 0 takes the device's form, 1 the GPU form (3-D grid, items
 * along the row), 2 the CPU form (one item per gathered row). */
extern int kiln__index_force_layout;

#endif
