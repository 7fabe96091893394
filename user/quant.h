/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Block fixed point: float32 <-> int32 with one exponent per block. */
#ifndef RINX_QUANT_H
#define RINX_QUANT_H

#include <stdint.h>
#include "uapi/rinx.h"

/* Fixed-point bits of one contribution when n ranks add: the sum of n
 * values bounded by 2^qbits stays within int32. */
int rinx_qbits(int nranks);
/* Fills slot (values, count, exp, flags; tail zeroed) from x[0..count). */
void rinx_quant_block(struct rinx_slot *s, const float *x, int count,
		      int qbits);
/* Writes slot's values as floats into x[0..count). */
void rinx_dequant_block(const struct rinx_slot *s, float *x, int count,
			int qbits);
/* dst += src with exponent alignment; the same arithmetic as the XDP hop. */
void rinx_block_add_user(struct rinx_slot *dst, const struct rinx_slot *src);
/* Same on a wire payload: returns the new exponent. */
int16_t rinx_payload_add(int32_t *dst, int16_t dst_exp, const int32_t *src,
			 int16_t src_exp);

#endif
