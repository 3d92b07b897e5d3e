/* kiln bench: the sort family's cases (tools/bench_sort.c), rows at the end of bench_cases[]. */
#ifndef KILN_TOOLS_BENCH_SORT_H
#define KILN_TOOLS_BENCH_SORT_H

#include "tools/bench.h"

int bench_sort_dtype(kiln_dtype d);
int bench_sort_i32(kiln_dtype d);
kiln_status bench_setup_sort(struct bench_state *st);
kiln_status bench_run_sort(struct bench_state *st);
kiln_status bench_setup_argsort(struct bench_state *st);
kiln_status bench_run_argsort(struct bench_state *st);
kiln_status bench_setup_sort_rows(struct bench_state *st);
kiln_status bench_setup_topk(struct bench_state *st);
kiln_status bench_run_topk(struct bench_state *st);
kiln_status bench_setup_topk_rows(struct bench_state *st);
kiln_status bench_run_topk_rows(struct bench_state *st);
kiln_status bench_setup_unique(struct bench_state *st);
kiln_status bench_run_unique(struct bench_state *st);
kiln_status bench_setup_searchsorted(struct bench_state *st);
kiln_status bench_run_searchsorted(struct bench_state *st);
double bench_bytes_sort(int64_t n, size_t esz);
double bench_bytes_argsort(int64_t n, size_t esz);
double bench_bytes_read(int64_t n, size_t esz);
double bench_bytes_unique(int64_t n, size_t esz);
double bench_bytes_searchsorted(int64_t n, size_t esz);

#endif
