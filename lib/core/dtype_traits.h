/* Internal dtype helpers shared by the runtime and the op families. */
#ifndef KILN_CORE_DTYPE_TRAITS_H
#define KILN_CORE_DTYPE_TRAITS_H

#include "kiln/dtype.h"

#define KILN__DT_BIT(d) (1u << (unsigned)(d))

/* The dtype classes named in include/kiln/op_table.h. */
enum kiln__dtype_class {
  KILN__CLASS_ALL,
  KILN__CLASS_NUM,
  KILN__CLASS_FLOAT,
  KILN__CLASS_INT,
  KILN__CLASS_INTNB,
};

int kiln__dtype_valid(kiln_dtype dtype);
const char *kiln__dtype_cl_name(kiln_dtype dtype);
unsigned kiln__dtype_class_mask(enum kiln__dtype_class cls);

/* Writes s converted to dtype (kiln_cast() rules) into out (dtype-size bytes). */
void kiln__scalar_to_bytes(kiln_scalar s, kiln_dtype dtype, void *out);

static inline int
kiln__dtype_is_float(kiln_dtype d)
{
  return d == KILN_F32 || d == KILN_F64;
}

#endif
