/*
 * Pieces shared by the nn training family's files (nn_optim.c: optimizer steps, clipping and
 * the family descriptor; nn_norm.c: dropout, group_norm, batch_norm). Not used elsewhere.
 */
#ifndef KILN_OPS_NN_TRAIN_H
#define KILN_OPS_NN_TRAIN_H

#include "ops/ops_common.h"

/* The family's embedded sources; each builds for f32 and f64, all but nn_attention also for
 * f16 and bf16. */
#define KILN__NNT_OPTIM "nn_optim"
#define KILN__NNT_NORM "nn_norm"
#define KILN__NNT_ATT "nn_attention"
#define KILN__NNT_EMBED "nn_embed"
#define KILN__NNT_WLOSS "nn_wloss"

/* A tensor of ctx holding f32 or f64 (the device must run it). */
kiln_status kiln__nnt_check_float(const char *op, kiln_context *ctx, const kiln_tensor *t,
                                  const char *what);

/* The same for the ops that also take f16 and bf16 (stored in 2 bytes, computed in f32): the
 * optimizers, clipping, dropout, group_norm, batch_norm, embedding backward, weighted losses. */
kiln_status kiln__nnt_check_real(const char *op, kiln_context *ctx, const kiln_tensor *t,
                                 const char *what);

/* The dtype kernels of dtype compute in (scalar arguments, scratch): f32 for f16 and bf16. */
kiln_dtype kiln__nnt_cdt(kiln_dtype dtype);

/* t is a tensor of ctx with ref's dtype and shape. */
kiln_status kiln__nnt_check_like(const char *op, kiln_context *ctx, const kiln_tensor *t,
                                 const kiln_tensor *ref, const char *what);

/* Build options of the family's sources: the forward attention tile (variant: nn_attention.c's
 * att_variant; NULL the device default). */
void kiln__nnt_build_options(const kiln_device_info *info, const char *source, kiln_dtype dtype,
                             const void *variant, char *buf, size_t len);

/* The `attention` tuner family (nn_attention.c): the forward kernel's tile. */
struct kiln__tune_family;
extern const struct kiln__tune_family kiln__attention_tune;

/* Test hook: the work-groups the per-channel reductions of group_norm/batch_norm aim for
 * (0: the device default, 2048 on GPUs, 1 on CPUs: one per channel). */
extern uint64_t kiln__nnt_chan_groups;

/* Test hook: nonzero makes CPU devices take the GPUs' forms of group_norm's and batch_norm's
 * normalization (norm_apply, not norm_apply_lines) and of batch_norm's statistics
 * (chan_stats, not chan_stats_lines). */
extern int kiln__nnt_norm_gpu;

/* Test hook: nonzero makes CPU devices run attention on the flash kernels (att_fwd and the
 * backward tables) instead of att_forward_gemm's and att_backward_gemm's GEMMs. */
extern int kiln__nnt_att_flash;

/* Test hook: the optimizer steps' kernel form. Adam: 0 the device default (4 on GPUs, 16 on
 * CPUs), 1 one element per work-item, 4 four, 16 runs of 64-byte vectors (16 elements, 8 in
 * f64).
 * SGD on CPU devices: 0 and 16 the vector, else one element. */
extern int kiln__nnt_optim_form;
/* Test hook: nonzero sizes the vector forms' launch (sgd_stepv, adam_stepv) for runs of this
 * many vectors per work-item in the largest slot, which otherwise follow the size
 * (launch_slots in nn_optim.c). */
extern int kiln__nnt_optim_run;

#endif
