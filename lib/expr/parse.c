/*
 * The text form of expressions: a recursive-descent parser that calls the
 * same builders as C callers, so a text and its C construction give the
 * same canonical expression. Grammar (docs/expr.md):
 *
 *   program := stmt { (';' | newline) stmt }
 *   stmt    := NAME '=' expr
 *   expr    := sum [ ('<' | '<=' | '>' | '>=' | '==' | '!=') sum ]
 *   sum     := term { ('+' | '-') term }
 *   term    := unary { ('*' | '/' | '%') unary }
 *   unary   := '-' unary | '+' unary | power
 *   power   := primary [ '**' unary ]
 *   primary := NUMBER | NAME | NAME '(' [ args ] ')' | '(' expr ')'
 *
 * Errors give the 1-based line and column of the offending token.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "expr/expr_internal.h"

#define OP "kiln_expr_parse"

struct parser {
  const char *text, *p;
  kiln_expr *e;
  const kiln_expr_var *vars;
  size_t nvars;
  int32_t var_node[KILN_EXPR_MAX_INPUTS + KILN_EXPR_MAX_SCALARS];
  /* statement results, usable by later statements */
  char names[KILN_EXPR_MAX_OUTPUTS][64];
  int32_t name_node[KILN_EXPR_MAX_OUTPUTS];
  int name_reduced[KILN_EXPR_MAX_OUTPUTS];
  size_t nnames;
  /* the statement's reduction */
  int red, red_seen_any, red_keep;
  kiln_reduce_op rop;
  int64_t raxes[KILN_MAX_DIMS];
  size_t nraxes;
  int red_all_axes;
  int red_scan; /* the trailing op is a scan: sop along raxes[0], exclusive in red_keep */
  kiln_scan_op sop;
  /* kiln__expr_parse_implicit: unknown names become inputs of this dtype */
  int implicit;
  kiln_dtype implicit_dtype;
  char inames[KILN_EXPR_MAX_INPUTS][64];
  int32_t inode[KILN_EXPR_MAX_INPUTS];
  size_t ninames;
  int depth; /* parse_unary's nesting, bounded by PARSE_MAX_DEPTH */
};

/*
 * Every recursion of the grammar (parentheses, calls, unary signs, powers) passes through
 * parse_unary, so bounding its nesting bounds the parser's stack: 20000 nested parentheses
 * overflowed an 8 MiB stack (about 420 bytes a level), and a thread's stack may be far
 * smaller. 256 levels take about 110 KiB; deeper text is a parse error, not a crash.
 */
#define PARSE_MAX_DEPTH 256

static void
position(const struct parser *ps, const char *at, int *line, int *col)
{
  *line = 1;
  *col = 1;
  for (const char *q = ps->text; q < at && *q; q++) {
    if (*q == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

static kiln_status perr(const struct parser *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static kiln_status
perr(const struct parser *ps, const char *at, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line, col;
  position(ps, at, &line, &col);
  return kiln__fail(KILN_ERR_PARSE, OP, 0, "line %d, column %d: %s", line, col, msg);
}

/* A builder's failure (a type error) with the column of the construct that made it. */
static kiln_status
at_column(const struct parser *ps, const char *at, kiln_status s)
{
  if (s == KILN_OK)
    return s;
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", kiln_last_error());
  int line, col;
  position(ps, at, &line, &col);
  return kiln__fail(s, OP, 0, "line %d, column %d: %s", line, col, msg);
}

/* Skips blanks and comments (# to end of line), not newlines (they end statements). */
static void
skip(struct parser *ps)
{
  for (;;) {
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')
      ps->p++;
    if (*ps->p == '#') {
      while (*ps->p && *ps->p != '\n')
        ps->p++;
      continue;
    }
    if (*ps->p == '\\' && ps->p[1] == '\n') {
      ps->p += 2;
      continue;
    }
    return;
  }
}

static int
accept(struct parser *ps, const char *tok)
{
  skip(ps);
  size_t n = strlen(tok);
  if (strncmp(ps->p, tok, n) != 0)
    return 0;
  /* '<' is not the start of '<=', '*' not of '**' */
  if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '=') && ps->p[1] == '=')
    return 0;
  if (n == 1 && tok[0] == '*' && ps->p[1] == '*')
    return 0;
  ps->p += n;
  return 1;
}

static int
ident(struct parser *ps, char *out, size_t len)
{
  skip(ps);
  if (!(isalpha((unsigned char)*ps->p) || *ps->p == '_'))
    return 0;
  size_t n = 0;
  const char *s = ps->p;
  while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
    ps->p++;
  n = (size_t)(ps->p - s);
  if (n >= len) {
    ps->p = s;
    return -1;
  }
  memcpy(out, s, n);
  out[n] = 0;
  return 1;
}

static kiln_status parse_expr(struct parser *ps, int32_t *id);

static kiln_status
parse_number(struct parser *ps, int32_t *id)
{
  const char *s = ps->p;
  int is_float = 0;
  const char *q = s;
  while (isdigit((unsigned char)*q))
    q++;
  if (*q == '.') {
    is_float = 1;
    q++;
    while (isdigit((unsigned char)*q))
      q++;
  }
  if (*q == 'e' || *q == 'E') {
    const char *r = q + 1;
    if (*r == '+' || *r == '-')
      r++;
    if (!isdigit((unsigned char)*r))
      return perr(ps, q, "exponent of '%.*s' has no digits", (int)(r - s), s);
    is_float = 1;
    q = r;
    while (isdigit((unsigned char)*q))
      q++;
  }
  if (isalpha((unsigned char)*q) || *q == '_')
    return perr(ps, q, "unexpected '%c' after the number '%.*s'", *q, (int)(q - s), s);
  char buf[128];
  if ((size_t)(q - s) >= sizeof buf)
    return perr(ps, s, "number too long");
  memcpy(buf, s, (size_t)(q - s));
  buf[q - s] = 0;
  ps->p = q;
  kiln_scalar v;
  if (is_float) {
    v = kiln_scalar_f64(strtod(buf, NULL));
  } else {
    errno = 0;
    long long i = strtoll(buf, NULL, 10);
    if (errno == ERANGE)
      return perr(ps, s, "integer '%s' does not fit in 64 bits", buf);
    v = kiln_scalar_i64(i);
  }
  return at_column(ps, s, kiln_expr_constant(ps->e, v, id));
}

static int
find_unary(const char *name, kiln_unary_op *op)
{
  for (int i = 0; i < KILN_UNARY_OP_COUNT; i++)
    if (!strcmp(kiln_unary_op_name((kiln_unary_op)i), name)) {
      *op = (kiln_unary_op)i;
      return 1;
    }
  return 0;
}

static int
find_binary(const char *name, kiln_binary_op *op)
{
  for (int i = 0; i < KILN_BINARY_OP_COUNT; i++)
    if (!strcmp(kiln_binary_op_name((kiln_binary_op)i), name)) {
      *op = (kiln_binary_op)i;
      return 1;
    }
  return 0;
}

static int
find_scan(const char *name, kiln_scan_op *op)
{
  static const struct {
    const char *name;
    kiln_scan_op op;
  } rows[] = {{"cumsum", KILN_SCAN_CUMSUM},
              {"cumprod", KILN_SCAN_CUMPROD},
              {"cummin", KILN_SCAN_CUMMIN},
              {"cummax", KILN_SCAN_CUMMAX}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (!strcmp(rows[i].name, name)) {
      *op = rows[i].op;
      return 1;
    }
  return 0;
}

static int
find_reduction(const char *name, kiln_reduce_op *op)
{
  static const struct {
    const char *name;
    kiln_reduce_op op;
  } rows[] = {{"sum", KILN_REDUCE_SUM}, {"prod", KILN_REDUCE_PROD}, {"mean", KILN_REDUCE_MEAN},
              {"amax", KILN_REDUCE_MAX}, {"amin", KILN_REDUCE_MIN}, {"any", KILN_REDUCE_ANY},
              {"all", KILN_REDUCE_ALL}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (!strcmp(rows[i].name, name)) {
      *op = rows[i].op;
      return 1;
    }
  return 0;
}

/* Comma-separated argument expressions up to ')'; *n receives their count. */
static kiln_status
parse_args(struct parser *ps, const char *fname, int32_t *args, int max, int *n)
{
  *n = 0;
  if (accept(ps, ")"))
    return KILN_OK;
  for (;;) {
    skip(ps);
    if (*n == max)
      return perr(ps, ps->p, "too many arguments for %s (at most %d)", fname, max);
    KILN_TRY(parse_expr(ps, &args[*n]));
    (*n)++;
    if (accept(ps, ")"))
      return KILN_OK;
    skip(ps);
    if (!accept(ps, ","))
      return perr(ps, ps->p, "expected ',' or ')' in the arguments of %s", fname);
  }
}

/* sum(e [, axis ...] [, keepdims]) at the top of a statement. */
static kiln_status
parse_reduction(struct parser *ps, const char *start, kiln_reduce_op rop, int is_scan,
                kiln_scan_op sop, const char *fname, int32_t *id)
{
  KILN_TRY(parse_expr(ps, id));
  ps->red = 1;
  ps->red_scan = is_scan;
  ps->sop = sop;
  ps->rop = rop;
  ps->nraxes = 0;
  ps->red_all_axes = 1;
  ps->red_keep = 0;
  while (accept(ps, ",")) {
    skip(ps);
    char word[16];
    const char *at = ps->p;
    int neg = accept(ps, "-");
    skip(ps);
    if (!neg && ident(ps, word, sizeof word) == 1) {
      if (strcmp(word, is_scan ? "exclusive" : "keepdims"))
        return perr(ps, at, "expected an axis or %s in %s, found '%s'",
                    is_scan ? "exclusive" : "keepdims", fname, word);
      ps->red_keep = 1;
      continue;
    }
    if (!isdigit((unsigned char)*ps->p))
      return perr(ps, ps->p, "expected an integer axis in %s", fname);
    long long ax = strtoll(ps->p, (char **)&ps->p, 10);
    if (ps->nraxes == KILN_MAX_DIMS)
      return perr(ps, at, "more than %d axes in %s", KILN_MAX_DIMS, fname);
    for (size_t i = 0; i < ps->nraxes; i++)
      if (ps->raxes[i] == (neg ? -ax : ax))
        return perr(ps, at, "axis %lld named twice in %s", neg ? -ax : ax, fname);
    ps->raxes[ps->nraxes++] = neg ? -ax : ax;
    ps->red_all_axes = 0;
  }
  if (!accept(ps, ")"))
    return perr(ps, ps->p, "expected ')' to close %s", fname);
  if (is_scan && ps->nraxes != 1)
    return perr(ps, start, "%s takes exactly one axis", fname);
  return KILN_OK;
}

static kiln_status
parse_call(struct parser *ps, const char *start, const char *name, int32_t *id)
{
  int32_t args[3];
  int n;
  kiln_unary_op u;
  kiln_binary_op bop;
  kiln_reduce_op rop;
  kiln_dtype dt;
  kiln_scan_op sop;
  if (find_reduction(name, &rop) || find_scan(name, &sop))
    return perr(ps, start, "%s(...) must be the whole right-hand side of a statement "
                           "(a trailing reduction or scan)", name);
  if (!strcmp(name, "cast")) {
    KILN_TRY(parse_expr(ps, &args[0]));
    char tname[16];
    if (!accept(ps, ","))
      return perr(ps, ps->p, "expected ',' and a dtype in cast");
    const char *at = (skip(ps), ps->p);
    if (ident(ps, tname, sizeof tname) != 1 || kiln_dtype_from_name(tname, &dt) != KILN_OK)
      return perr(ps, at, "expected a dtype name (f32, f64, i32, i64, u8, bool) in cast");
    if (!accept(ps, ")"))
      return perr(ps, ps->p, "expected ')' to close cast");
    return at_column(ps, start, kiln_expr_cast(ps->e, args[0], dt, id));
  }
  KILN_TRY(parse_args(ps, name, args, 3, &n));
  if (kiln_dtype_from_name(name, &dt) == KILN_OK) {
    if (n != 1)
      return perr(ps, start, "%s(...) takes one argument, not %d", name, n);
    return at_column(ps, start, kiln_expr_cast(ps->e, args[0], dt, id));
  }
  if (!strcmp(name, "where") || !strcmp(name, "clamp")) {
    if (n != 3)
      return perr(ps, start, "%s takes three arguments, not %d", name, n);
    if (name[0] == 'w')
      return at_column(ps, start, kiln_expr_where(ps->e, args[0], args[1], args[2], id));
    return at_column(ps, start, kiln_expr_clamp(ps->e, args[0], args[1], args[2], id));
  }
  if (find_unary(name, &u)) {
    if (n != 1)
      return perr(ps, start, "%s takes one argument, not %d", name, n);
    return at_column(ps, start, kiln_expr_unary(ps->e, u, args[0], id));
  }
  if (find_binary(name, &bop)) {
    if (n != 2)
      return perr(ps, start, "%s takes two arguments, not %d", name, n);
    return at_column(ps, start, kiln_expr_binary(ps->e, bop, args[0], args[1], id));
  }
  return perr(ps, start, "unknown function '%s'", name);
}

static kiln_status
parse_primary(struct parser *ps, int32_t *id)
{
  skip(ps);
  const char *start = ps->p;
  if (isdigit((unsigned char)*ps->p) || (*ps->p == '.' && isdigit((unsigned char)ps->p[1])))
    return parse_number(ps, id);
  if (accept(ps, "(")) {
    KILN_TRY(parse_expr(ps, id));
    if (!accept(ps, ")"))
      return perr(ps, (skip(ps), ps->p), "expected ')' to close the '(' at column %d",
                  (int)(start - ps->text) + 1);
    return KILN_OK;
  }
  char name[64];
  int r = ident(ps, name, sizeof name);
  if (r < 0)
    return perr(ps, start, "name longer than 63 characters");
  if (r == 0) {
    if (!*ps->p || *ps->p == '\n' || *ps->p == ';')
      return perr(ps, ps->p, "expression ends where an operand was expected");
    return perr(ps, ps->p, "unexpected '%c' where an operand was expected", *ps->p);
  }
  if (accept(ps, "("))
    return parse_call(ps, start, name, id);
  for (size_t i = 0; i < ps->nvars; i++)
    if (!strcmp(ps->vars[i].name, name)) {
      *id = ps->var_node[i];
      return KILN_OK;
    }
  for (size_t i = 0; i < ps->nnames; i++)
    if (!strcmp(ps->names[i], name)) {
      if (ps->name_reduced[i])
        return perr(ps, start, "'%s' is a reduced result and cannot be used again", name);
      *id = ps->name_node[i];
      return KILN_OK;
    }
  for (size_t i = 0; i < ps->ninames; i++)
    if (!strcmp(ps->inames[i], name)) {
      *id = ps->inode[i];
      return KILN_OK;
    }
  if (ps->implicit && strcmp(name, "pi") && strcmp(name, "inf") && strcmp(name, "nan")) {
    if (ps->ninames == KILN_EXPR_MAX_INPUTS)
      return perr(ps, start, "more than %d inputs", KILN_EXPR_MAX_INPUTS);
    KILN_TRY(at_column(ps, start, kiln_expr_input(ps->e, name, ps->implicit_dtype, id)));
    snprintf(ps->inames[ps->ninames], sizeof ps->inames[0], "%s", name);
    ps->inode[ps->ninames++] = *id;
    return KILN_OK;
  }
  if (!strcmp(name, "pi"))
    return at_column(ps, start,
                     kiln_expr_constant(ps->e, kiln_scalar_f64(3.14159265358979323846), id));
  if (!strcmp(name, "inf"))
    return at_column(ps, start, kiln_expr_constant(ps->e, kiln_scalar_f64(INFINITY), id));
  if (!strcmp(name, "nan"))
    return at_column(ps, start, kiln_expr_constant(ps->e, kiln_scalar_f64(NAN), id));
  return perr(ps, start, "unknown name '%s'", name);
}

static kiln_status parse_unary(struct parser *ps, int32_t *id);

static kiln_status
parse_power(struct parser *ps, int32_t *id)
{
  int32_t a, b;
  KILN_TRY(parse_primary(ps, &a));
  skip(ps);
  const char *at = ps->p;
  if (accept(ps, "**")) {
    KILN_TRY(parse_unary(ps, &b));
    return at_column(ps, at, kiln_expr_binary(ps->e, KILN_OP_POW, a, b, id));
  }
  *id = a;
  return KILN_OK;
}

static kiln_status
parse_unary_at(struct parser *ps, int32_t *id)
{
  skip(ps);
  const char *at = ps->p;
  if (accept(ps, "-")) {
    int32_t x;
    KILN_TRY(parse_unary(ps, &x));
    return at_column(ps, at, kiln_expr_unary(ps->e, KILN_OP_NEG, x, id));
  }
  if (accept(ps, "+"))
    return parse_unary(ps, id);
  return parse_power(ps, id);
}

static kiln_status
parse_unary(struct parser *ps, int32_t *id)
{
  if (ps->depth >= PARSE_MAX_DEPTH) {
    skip(ps);
    return perr(ps, ps->p, "nesting deeper than %d levels", PARSE_MAX_DEPTH);
  }
  ps->depth++;
  kiln_status s = parse_unary_at(ps, id);
  ps->depth--;
  return s;
}

static kiln_status
parse_term(struct parser *ps, int32_t *id)
{
  int32_t a, b;
  KILN_TRY(parse_unary(ps, &a));
  for (;;) {
    skip(ps);
    const char *at = ps->p;
    kiln_binary_op op;
    if (accept(ps, "*"))
      op = KILN_OP_MUL;
    else if (accept(ps, "/"))
      op = KILN_OP_DIV;
    else if (accept(ps, "%"))
      op = KILN_OP_REMAINDER;
    else
      break;
    KILN_TRY(parse_unary(ps, &b));
    KILN_TRY(at_column(ps, at, kiln_expr_binary(ps->e, op, a, b, &a)));
  }
  *id = a;
  return KILN_OK;
}

static kiln_status
parse_sum(struct parser *ps, int32_t *id)
{
  int32_t a, b;
  KILN_TRY(parse_term(ps, &a));
  for (;;) {
    skip(ps);
    const char *at = ps->p;
    kiln_binary_op op;
    if (accept(ps, "+"))
      op = KILN_OP_ADD;
    else if (accept(ps, "-"))
      op = KILN_OP_SUB;
    else
      break;
    KILN_TRY(parse_term(ps, &b));
    KILN_TRY(at_column(ps, at, kiln_expr_binary(ps->e, op, a, b, &a)));
  }
  *id = a;
  return KILN_OK;
}

static kiln_status
parse_expr(struct parser *ps, int32_t *id)
{
  int32_t a, b;
  KILN_TRY(parse_sum(ps, &a));
  skip(ps);
  const char *at = ps->p;
  static const struct {
    const char *tok;
    kiln_binary_op op;
  } cmps[] = {{"<=", KILN_OP_LE}, {">=", KILN_OP_GE}, {"==", KILN_OP_EQ}, {"!=", KILN_OP_NE},
              {"<", KILN_OP_LT},  {">", KILN_OP_GT}};
  for (size_t i = 0; i < sizeof cmps / sizeof cmps[0]; i++) {
    if (!accept(ps, cmps[i].tok))
      continue;
    KILN_TRY(parse_sum(ps, &b));
    KILN_TRY(at_column(ps, at, kiln_expr_binary(ps->e, cmps[i].op, a, b, id)));
    skip(ps);
    for (size_t j = 0; j < sizeof cmps / sizeof cmps[0]; j++)
      if (!strncmp(ps->p, cmps[j].tok, strlen(cmps[j].tok)))
        return perr(ps, ps->p, "comparisons do not chain (a < b < c); use logical_and");
    return KILN_OK;
  }
  *id = a;
  return KILN_OK;
}

static kiln_status
parse_statement(struct parser *ps)
{
  skip(ps);
  const char *start = ps->p;
  char name[64];
  int r = ident(ps, name, sizeof name);
  if (r < 0)
    return perr(ps, start, "name longer than 63 characters");
  if (r == 0)
    return perr(ps, start, "expected a statement 'name = expression'");
  if (!accept(ps, "="))
    return perr(ps, (skip(ps), ps->p), "expected '=' after '%s'", name);
  for (size_t i = 0; i < ps->nvars; i++)
    if (!strcmp(ps->vars[i].name, name))
      return perr(ps, start, "'%s' is an input or scalar and cannot be assigned", name);
  for (size_t i = 0; i < ps->nnames; i++)
    if (!strcmp(ps->names[i], name))
      return perr(ps, start, "'%s' is assigned twice", name);
  for (size_t i = 0; i < ps->ninames; i++)
    if (!strcmp(ps->inames[i], name))
      return perr(ps, start, "'%s' is an input (used before this statement) and cannot be "
                             "assigned", name);
  if (ps->nnames == KILN_EXPR_MAX_OUTPUTS)
    return perr(ps, start, "more than %d statements (outputs)", KILN_EXPR_MAX_OUTPUTS);
  int32_t id;
  int had = ps->red, had_scan = ps->red_scan;
  kiln_scan_op prev_sop = ps->sop;
  kiln_reduce_op prev_op = ps->rop;
  int64_t prev_axes[KILN_MAX_DIMS];
  size_t prev_n = ps->nraxes;
  int prev_all = ps->red_all_axes, prev_keep = ps->red_keep;
  memcpy(prev_axes, ps->raxes, sizeof prev_axes);
  ps->red = 0;
  /* a reduction call is the whole right-hand side: look ahead for `sum(` */
  skip(ps);
  const char *rhs = ps->p, *save = ps->p;
  char fname[16];
  kiln_reduce_op rop = KILN_REDUCE_SUM;
  kiln_scan_op sop = KILN_SCAN_CUMSUM;
  int is_red = 0, is_scan = 0;
  if (ident(ps, fname, sizeof fname) == 1 &&
      ((is_red = find_reduction(fname, &rop)) || (is_scan = find_scan(fname, &sop))) &&
      accept(ps, "("))
    is_red = 1;
  else
    ps->p = save, is_red = is_scan = 0;
  if (is_red) {
    KILN_TRY(parse_reduction(ps, rhs, rop, is_scan, sop, fname, &id));
    skip(ps);
    if (*ps->p && *ps->p != '\n' && *ps->p != ';')
      return perr(ps, ps->p, "%s(...) must be the whole right-hand side of a statement "
                             "(a trailing reduction)", fname);
  } else {
    KILN_TRY(parse_expr(ps, &id));
  }
  if (ps->nnames > 0 && ps->red != ps->red_seen_any)
    return perr(ps, start, "every statement must end in the same reduction, or none may");
  if (ps->red && had &&
      (prev_op != ps->rop || had_scan != ps->red_scan || prev_sop != ps->sop ||
       prev_n != ps->nraxes || prev_all != ps->red_all_axes ||
       prev_keep != ps->red_keep || memcmp(prev_axes, ps->raxes, prev_n * sizeof prev_axes[0])))
    return perr(ps, start, "every statement must end in the same reduction");
  ps->red_seen_any = ps->red;
  snprintf(ps->names[ps->nnames], sizeof ps->names[0], "%s", name);
  ps->name_node[ps->nnames] = id;
  ps->name_reduced[ps->nnames] = ps->red;
  ps->nnames++;
  return at_column(ps, start, kiln_expr_output(ps->e, name, id));
}

static kiln_status parse_text(const char *text, const kiln_expr_var *vars, size_t nvars,
                              int implicit, kiln_dtype implicit_dtype, kiln_expr **out);

kiln_status
kiln_expr_parse(const char *text, const kiln_expr_var *vars, size_t nvars, kiln_expr **out)
{
  return parse_text(text, vars, nvars, 0, KILN_F32, out);
}

kiln_status
kiln__expr_parse_implicit(const char *text, kiln_dtype dtype, kiln_expr **out)
{
  return parse_text(text, NULL, 0, 1, dtype, out);
}

static kiln_status
parse_text(const char *text, const kiln_expr_var *vars, size_t nvars, int implicit,
           kiln_dtype implicit_dtype, kiln_expr **out)
{
  KILN_RETURN_IF(!text || !out, KILN_ERR_INVALID_ARGUMENT, OP, "text or out is NULL");
  KILN_RETURN_IF(!vars && nvars, KILN_ERR_INVALID_ARGUMENT, OP, "vars is NULL with nvars %zu",
                 nvars);
  KILN_RETURN_IF(nvars > KILN_EXPR_MAX_INPUTS + KILN_EXPR_MAX_SCALARS, KILN_ERR_INVALID_ARGUMENT,
                 OP, "%zu vars (at most %d)", nvars,
                 KILN_EXPR_MAX_INPUTS + KILN_EXPR_MAX_SCALARS);
  *out = NULL;
  struct parser ps;
  memset(&ps, 0, sizeof ps);
  ps.text = ps.p = text;
  ps.vars = vars;
  ps.nvars = nvars;
  ps.implicit = implicit;
  ps.implicit_dtype = implicit_dtype;
  KILN_TRY(kiln_expr_create(&ps.e));
  kiln_status s = KILN_OK;
  for (size_t i = 0; i < nvars && s == KILN_OK; i++) {
    s = vars[i].is_scalar ? kiln_expr_scalar(ps.e, vars[i].name, vars[i].dtype, &ps.var_node[i])
                          : kiln_expr_input(ps.e, vars[i].name, vars[i].dtype, &ps.var_node[i]);
    if (s != KILN_OK) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", kiln_last_error());
      s = kiln__fail(s, OP, 0, "var %zu: %s", i, msg);
    }
  }
  while (s == KILN_OK) {
    skip(&ps);
    while (*ps.p == '\n' || *ps.p == ';') {
      ps.p++;
      skip(&ps);
    }
    if (!*ps.p)
      break;
    s = parse_statement(&ps);
    if (s != KILN_OK)
      break;
    skip(&ps);
    if (*ps.p && *ps.p != '\n' && *ps.p != ';')
      s = perr(&ps, ps.p, "unexpected '%c' after the statement", *ps.p);
  }
  if (s == KILN_OK && ps.nnames == 0)
    s = perr(&ps, ps.p, "no statement ('name = expression')");
  if (s == KILN_OK && ps.red && ps.red_scan)
    s = kiln_expr_scan(ps.e, ps.sop, ps.raxes[0], ps.red_keep);
  else if (s == KILN_OK && ps.red)
    s = kiln_expr_reduce(ps.e, ps.rop, ps.red_all_axes ? NULL : ps.raxes, ps.nraxes,
                         ps.red_keep);
  if (s != KILN_OK) {
    kiln_expr_release(ps.e);
    return s;
  }
  *out = ps.e;
  return KILN_OK;
}
