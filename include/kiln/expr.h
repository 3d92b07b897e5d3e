/*
 * Fused expressions: an expression over tensors and scalars built from the
 * op table's ops (include/kiln/op_table.h), compiled into one generated
 * OpenCL kernel and launched as one (two with a split reduction).
 *
 * An expression (kiln_expr) is a graph of nodes: inputs (tensors, declared
 * with a name and a dtype), scalars (named values given at each run),
 * constants (numbers fixed at construction), and unary, binary, where,
 * clamp and cast nodes over them. Inputs broadcast against each other as
 * in NumPy. One or several nodes are marked as outputs; an optional
 * trailing reduction (sum, prod, mean, max, min, any, all over given axes,
 * with keepdims) applies to every output.
 *
 * Construction checks types: an op that does not accept its operands'
 * dtype (a bitwise op on floats) is refused at once with KILN_ERR_DTYPE and
 * a message naming the node. Operands of different dtypes meet at the
 * dtype kiln_dtype_promote() gives (a cast node is inserted); a constant
 * takes the dtype of the tensor it meets (2 * x is f32 for f32 x), as
 * Python numbers do in NumPy 2 and PyTorch.
 *
 * Canonicalisation: equal subexpressions are one node, commutative
 * operands are ordered, x > y is stored as y < x. Expressions that are the
 * same math, built in any order, have the same kiln_expr_hash() and share a
 * compiled kernel; scalars and constants are kernel arguments, so changing a
 * value never compiles anything. docs/expr.md has the details, the text
 * grammar and the caching.
 *
 * Node ids: small non-negative integers returned by the builders, valid
 * within their expression only.
 *
 * Dtypes: f32, f64, f16, bf16, i32, i64, u8, bool (complex inputs:
 * KILN_ERR_DTYPE); f16 and bf16 compute in float, each op's result rounded to
 * the 16-bit type, as the elementwise family does. f64 nodes need a device
 * with fp64 (KILN_ERR_UNSUPPORTED at planning).
 *
 * Threads: an expression is not thread-safe while being built; once built,
 * plans may be made from it in several threads at once (it is only read).
 */
#ifndef KILN_EXPR_H
#define KILN_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/elementwise.h"
#include "kiln/reduce.h"
#include "kiln/scan.h"
#include "kiln/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_expr kiln_expr;
typedef struct kiln_expr_plan kiln_expr_plan;

/** Most inputs, scalars (named and constants together) and outputs of one expression. */
#define KILN_EXPR_MAX_INPUTS 16
#define KILN_EXPR_MAX_SCALARS 32
#define KILN_EXPR_MAX_OUTPUTS 16
/** Most nodes of one expression. */
#define KILN_EXPR_MAX_NODES 512

/**
 * Creates an empty expression; release with kiln_expr_release().
 * @return KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL out); KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_expr_create(kiln_expr **out);

/** Frees an expression (NULL is fine). Plans made from it stay valid. */
KILN_API void kiln_expr_release(kiln_expr *e);

/**
 * Declares the next tensor input (inputs are given to kiln_expr_plan_create
 * in declaration order). name: 1-63 characters [A-Za-z_][A-Za-z0-9_]*, not
 * used by another input or scalar; copied.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE (e); KILN_ERR_INVALID_ARGUMENT
 *         (NULL name or id, bad or repeated name, too many inputs or nodes);
 *         KILN_ERR_DTYPE (a dtype expressions do not take);
 *         KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_expr_input(kiln_expr *e, const char *name, kiln_dtype dtype,
                                     int32_t *id);

/**
 * Declares the next named scalar: a value of dtype given at each run
 * (kiln_expr_plan_run). Names as for inputs. Statuses as kiln_expr_input().
 */
KILN_API kiln_status kiln_expr_scalar(kiln_expr *e, const char *name, kiln_dtype dtype,
                                      int32_t *id);

/**
 * A constant: value is fixed here but still reaches the kernel as an
 * argument (expressions that differ only in constants share a kernel). It
 * takes the dtype of what it is combined with (f32 for an integer constant
 * added to f32, and so on); alone, or with other constants only, f32 for a
 * floating value and i64 for an integer.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         id, too many scalars or nodes); KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_expr_constant(kiln_expr *e, kiln_scalar value, int32_t *id);

/**
 * y = op(x). Result dtype as kiln_unary().
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (op
 *         outside the enum, unknown node id, NULL id, too many nodes);
 *         KILN_ERR_DTYPE (op does not accept x's dtype; the message names
 *         the node); KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_expr_unary(kiln_expr *e, kiln_unary_op op, int32_t x, int32_t *id);

/** c = op(a, b) (operands promoted to a common dtype first). Statuses as kiln_expr_unary(). */
KILN_API kiln_status kiln_expr_binary(kiln_expr *e, kiln_binary_op op, int32_t a, int32_t b,
                                      int32_t *id);

/**
 * cond ? a : b; cond is read as bool (nonzero is true), a and b are
 * promoted to a common dtype, the result's. Statuses as kiln_expr_unary().
 */
KILN_API kiln_status kiln_expr_where(kiln_expr *e, int32_t cond, int32_t a, int32_t b,
                                     int32_t *id);

/**
 * min(max(x, lo), hi) as kiln_clamp(): lo and hi are converted to x's
 * dtype; NaN in x stays NaN. x must be of a NUM dtype (bool: KILN_ERR_DTYPE).
 * Statuses as kiln_expr_unary().
 */
KILN_API kiln_status kiln_expr_clamp(kiln_expr *e, int32_t x, int32_t lo, int32_t hi,
                                     int32_t *id);

/** x converted to dtype by the kiln_cast() rules. Statuses as kiln_expr_unary(). */
KILN_API kiln_status kiln_expr_cast(kiln_expr *e, int32_t x, kiln_dtype dtype, int32_t *id);

/**
 * Marks node x as the next output, named name (copied; NULL gives "out<k>").
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT
 *         (unknown node, too many outputs, bad name); KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_expr_output(kiln_expr *e, const char *name, int32_t x);

/**
 * Ends every output with a reduction over axes (of the broadcast shape;
 * negative counts from the end; axes == NULL with naxes == 0: all axes),
 * keepdims as kiln_reduce(). op: SUM, PROD, MEAN, MIN, MAX, ANY or ALL;
 * result dtypes as kiln_reduce_result_dtype(). A reduction over zero
 * elements gives the empty value of kiln_reduce (min and max: KILN_ERR_SHAPE
 * at run time). Calling it again replaces the reduction.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (op
 *         not listed, naxes > 8, NULL axes with naxes > 0, an axis named
 *         twice); KILN_ERR_DTYPE (an output's dtype the op does not take).
 */
KILN_API kiln_status kiln_expr_reduce(kiln_expr *e, kiln_reduce_op op, const int64_t *axes,
                                      size_t naxes, int keepdims);

/**
 * Ends every output with a running op along one axis of the broadcast shape
 * (negative counts from the end): CUMSUM, CUMPROD, CUMMIN or CUMMAX, result
 * dtypes as kiln_scan_result_dtype(); exclusive nonzero shifts by one (the
 * first element is kiln_scan's: 0, 1, and for cummin/cummax NaN for floats,
 * the dtype's largest/smallest value for integers). Outputs keep the broadcast shape. Replaces a reduction set
 * by kiln_expr_reduce (and a later kiln_expr_reduce replaces the scan).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (op
 *         not listed).
 */
KILN_API kiln_status kiln_expr_scan(kiln_expr *e, kiln_scan_op op, int64_t axis, int exclusive);

/** A name and dtype the text form may use: a tensor input, or a scalar when is_scalar. */
typedef struct kiln_expr_var {
  const char *name;
  kiln_dtype dtype;
  int is_scalar;
} kiln_expr_var;

/**
 * Parses the text form into a new expression (docs/expr.md, "Grammar"):
 * statements `name = expression` separated by ';' or newlines, each
 * assigned name an output (later statements may use it); numbers (integer
 * or floating, constants of the expression), the names of vars (declared
 * in that order as inputs and scalars), + - * / %, comparisons
 * (< <= > >= == !=), unary minus, parentheses, and calls of the op table's
 * ops by name (sigmoid(x), max(a, b)), where(c, a, b), clamp(x, lo, hi),
 * cast(x, f64) (or f64(x)), and one trailing reduction per statement
 * (sum(e), mean(e, 1), max(e, 0, 1)) which must be the same in every
 * statement.
 * @return KILN_OK; KILN_ERR_INVALID_ARGUMENT (NULL text or out, NULL vars
 *         with nvars > 0, a bad var); KILN_ERR_PARSE (malformed text: the
 *         message gives the 1-based line and column and what was expected);
 *         KILN_ERR_DTYPE (a type error, message with the column);
 *         KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_expr_parse(const char *text, const kiln_expr_var *vars, size_t nvars,
                                     kiln_expr **out);

/**
 * Hash of the expression's canonical form: equal for expressions that are
 * the same math whatever the construction order and the constant values,
 * different when an op, a dtype, the structure, the inputs, the outputs or
 * the reduction differ.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (NULL
 *         out, no output).
 */
KILN_API kiln_status kiln_expr_hash(const kiln_expr *e, uint64_t *out);

/** Counts of what an expression declares (any pointer may be NULL). KILN_OK or INVALID_HANDLE. */
KILN_API kiln_status kiln_expr_counts(const kiln_expr *e, size_t *ninputs, size_t *nscalars,
                                      size_t *noutputs);

/**
 * A plan: the expression bound to one context and the shapes of its inputs
 * (their dtypes are the declared ones), with its kernel compiled (through
 * the program registry and the disk cache) and its launch decided, so that
 * each kiln_expr_plan_run is one launch (two for a reduction split across
 * work-groups). inputs: ninputs tensors in declaration order; only their
 * shapes are used here. The plan does not keep e or the tensors; it uses
 * ctx and must be released before ctx is.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE (ctx, e, a tensor);
 *         KILN_ERR_INVALID_ARGUMENT (NULL out, ninputs not the declared
 *         count, no output);
 *         KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE (an input of another
 *         dtype than declared, reduced or scanned outputs whose result
 *         dtypes differ); KILN_ERR_SHAPE (inputs do not broadcast, an axis
 *         outside the broadcast shape or named twice);
 *         KILN_ERR_UNSUPPORTED (f64 without fp64); KILN_ERR_BUILD (the
 *         generated kernel failed to compile: a kiln bug, the log is in the
 *         message); KILN_ERR_OPENCL; KILN_ERR_HOST_MEMORY.
 */
KILN_API kiln_status kiln_expr_plan_create(kiln_context *ctx, const kiln_expr *e,
                                           const kiln_tensor *const *inputs, size_t ninputs,
                                           kiln_expr_plan **out);

/** Frees a plan (NULL is fine). */
KILN_API void kiln_expr_plan_release(kiln_expr_plan *p);

/**
 * Shape and dtype of output k of a plan (shape: KILN_MAX_DIMS entries).
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT (k out
 *         of range, NULL pointers).
 */
KILN_API kiln_status kiln_expr_plan_output(const kiln_expr_plan *p, size_t k, kiln_dtype *dtype,
                                           size_t *ndim, int64_t *shape);

/**
 * Runs the plan: inputs of the planned shapes and dtypes, values for the
 * named scalars in declaration order (each converted to its scalar's dtype
 * by kiln_cast rules; NULL when there are none), and one output per
 * expression output, each following the output convention (*outs[k] NULL:
 * allocated; else checked for shape, dtype and context). Outputs must not
 * share bytes with inputs or with each other. Enqueued, not blocking.
 * @return KILN_OK; KILN_ERR_INVALID_HANDLE; KILN_ERR_INVALID_ARGUMENT
 *         (wrong counts, NULL outs, an output sharing bytes with an input
 *         or another output); KILN_ERR_CONTEXT_MISMATCH; KILN_ERR_DTYPE;
 *         KILN_ERR_SHAPE (an input's shape differs from the planned one, an
 *         output of the wrong shape, min/max over zero elements);
 *         KILN_ERR_OPENCL; KILN_ERR_DEVICE_MEMORY; KILN_ERR_HOST_MEMORY.
 *         Outputs kiln allocated are released on failure.
 */
KILN_API kiln_status kiln_expr_plan_run(kiln_expr_plan *p, const kiln_tensor *const *inputs,
                                        size_t ninputs, const kiln_scalar *scalars,
                                        size_t nscalars, kiln_tensor **outs, size_t noutputs);

/**
 * kiln_expr_plan_create, kiln_expr_plan_run and release in one call (the
 * kernel itself is compiled once per context and options, as for any op).
 * Statuses as the two.
 */
KILN_API kiln_status kiln_expr_eval(kiln_context *ctx, const kiln_expr *e,
                                    const kiln_tensor *const *inputs, size_t ninputs,
                                    const kiln_scalar *scalars, size_t nscalars,
                                    kiln_tensor **outs, size_t noutputs);

/**
 * The generated OpenCL C of a plan, NUL-terminated, owned by the plan
 * (valid until it is released). NULL for an invalid handle.
 */
KILN_API const char *kiln_expr_plan_source(const kiln_expr_plan *p);

#ifdef __cplusplus
}
#endif
#endif
