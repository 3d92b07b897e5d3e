/*
 * Host references of the elementwise op table, shared by the suites that run
 * the table's ops (test_elementwise.c, test_expr.c): one reference per op
 * (unary_ref, binary_ref, the kiln_cast rules of cast_value), the per-op
 * tolerances and the element comparison, with the dtype helpers they need.
 * test_elementwise.c's header comment gives the tolerances' reasoning.
 */
#ifndef KILN_TESTS_EW_REF_H
#define KILN_TESTS_EW_REF_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

typedef struct tol_t {
  double rel, abs;
  int zsign; /* a zero result must have the reference's sign */
  int ulps;  /* f16/bf16: also allowed this many ulps of the storage type (infinity included) */
} tol_t;

extern const tol_t EXACT;
extern const tol_t EXACT_NOSIGN;

/* A reference result: f for float results, i for integer and bool results. */
typedef struct rv_t {
  double f;
  int64_t i;
} rv_t;

int is_half(kiln_dtype dt);
int is_float(kiln_dtype dt);
uint16_t half_bits(const void *p, size_t i);
int half_ord(uint16_t h);
double half_ulp(kiln_dtype dt, double w);
int is_signed(kiln_dtype dt);
int bits_of(kiln_dtype dt);
int64_t int_min(kiln_dtype dt);
int64_t int_max(kiln_dtype dt);
double getf(kiln_dtype dt, const void *p, size_t i);
int64_t geti(kiln_dtype dt, const void *p, size_t i);
void putf(kiln_dtype dt, void *p, size_t i, double v);
void puti(kiln_dtype dt, void *p, size_t i, int64_t v);
int64_t wrap(kiln_dtype dt, uint64_t v);
int elem_matches(kiln_dtype dt, const void *got, const void *want, size_t i, tol_t t);
int64_t ineg(kiln_dtype dt, int64_t v);
double sign_f(double x);
double sigmoid_f(double x);
int unary_ref(kiln_unary_op op, kiln_dtype dt, double x, int64_t v, rv_t *r);
int64_t idiv(kiln_dtype dt, int64_t a, int64_t b);
int64_t ifmod(int64_t a, int64_t b);
int64_t iremainder(int64_t a, int64_t b);
int64_t ishl(kiln_dtype dt, int64_t a, int64_t b);
int64_t ishr(kiln_dtype dt, int64_t a, int64_t b);
double fremainder(double a, double b);
double fmax_nan(double a, double b);
double fmin_nan(double a, double b);
int binary_ref(kiln_binary_op op, kiln_dtype dt, double a, double b, int64_t ai, int64_t bi, rv_t *r);
void cast_value(int from_float, double f, int64_t i, kiln_dtype to, void *out, size_t k);
void cast_elem(kiln_dtype from, const void *in, size_t j, kiln_dtype to, void *out, size_t k);
tol_t unary_tol(kiln_unary_op op, kiln_dtype dt);
tol_t binary_tol(kiln_binary_op op, kiln_dtype dt);

#endif
