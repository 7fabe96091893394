/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Block fixed point: float32 <-> int32 with one exponent per block. */
#ifndef RINX_QUANT_H
#define RINX_QUANT_H

#include <stddef.h>
#include <stdint.h>
#include "uapi/rinx.h"

/* Fixed-point bits of one contribution when n ranks add: the sum of n
 * values bounded by 2^qbits stays within int32. */
int rinx_qbits(int nranks);
/* Fills slot (values, count, exp, flags; tail zeroed) from x[0..count),
 * count <= RINX_BLOCK_VALUES. Leaves round alone. */
void rinx_quant_block(struct rinx_slot *s, const float *x, int count,
		      int qbits);
/* The same for blocks of bval values (RINX_BLOCK_VALUES or
 * RINX_BLOCK_VALUES_MIN): the tail is zeroed up to bval. */
void rinx_quant_block_n(struct rinx_slot *s, const float *x, int count,
			int qbits, int bval);
/* Writes slot's values as floats into x[0..count). */
void rinx_dequant_block(const struct rinx_slot *s, float *x, int count,
			int qbits);
/* The same over a range: x[0..nvals) into the ceil(nvals / 768) slots
 * s[0], s[1], ... (every block full but the last), one dispatch and one
 * floating-point environment switch for the whole range. Lets a caller
 * convert a window in chunks and send each chunk before converting the next.
 * Leaves round alone. */
void rinx_quant_blocks(struct rinx_slot *s, const float *x, size_t nvals,
		       int qbits);
void rinx_dequant_blocks(const struct rinx_slot *s, float *x, size_t nvals,
			 int qbits);
/* The same over slots of bval values each. */
void rinx_quant_blocks_n(struct rinx_slot *s, const float *x, size_t nvals,
			 int qbits, int bval);
void rinx_dequant_blocks_n(const struct rinx_slot *s, float *x, size_t nvals,
			   int qbits, int bval);

/* A jumbo block (count <= RINX_BLOCK_VALUES_JUMBO values, one exponent)
 * into the RINX_JUMBO_SLOTS consecutive slots s[0], s[1], ...: the first
 * slot's header speaks for the block, values k * RINX_BLOCK_VALUES on are
 * in slot k (tail zeroed); and back into floats. Leaves round alone. */
void rinx_quant_jumbo(struct rinx_slot *s, const float *x, int count,
		      int qbits);
void rinx_dequant_jumbo(const struct rinx_slot *s, float *x, int count,
			int qbits);

/* Conversion paths. All give bit-identical slots and floats for every input;
 * the fastest the CPU runs is used unless RINX_QUANT (auto, portable, avx2,
 * avx512) in the environment says otherwise (read at the first conversion). */
enum rinx_quant_path {
	RINX_QUANT_PORTABLE,
	RINX_QUANT_AVX2,
	RINX_QUANT_AVX512,
	RINX_QUANT_NPATHS
};
const char *rinx_quant_path_name(enum rinx_quant_path p);
int rinx_quant_path_supported(enum rinx_quant_path p);
enum rinx_quant_path rinx_quant_get_path(void);
/* For tests and measurement: -EOPNOTSUPP if this CPU cannot run p. */
int rinx_quant_set_path(enum rinx_quant_path p);
/* dst += src with exponent alignment; the same arithmetic as the XDP hop. */
void rinx_block_add_user(struct rinx_slot *dst, const struct rinx_slot *src);
/* Same on a wire payload: returns the new exponent. */
int16_t rinx_payload_add(int32_t *dst, int16_t dst_exp, const int32_t *src,
			 int16_t src_exp);
/* ... of n values (a small-MTU job's blocks). */
int16_t rinx_payload_add_n(int32_t *dst, int16_t dst_exp,
			   const int32_t *src, int16_t src_exp, int n);

#endif
