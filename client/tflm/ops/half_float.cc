/*
 * half_float.cc - IEEE 754 binary16 (half precision) to binary32 (float)
 * conversion, for the FLOAT16 DEQUANTIZE kernel (arenad_tflm_ops.h).
 *
 * binary16: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits.
 * binary32: 1 sign bit, 8 exponent bits (bias 127), 23 fraction bits.
 * Every binary16 value is exactly representable as a binary32, so the
 * conversion only moves bits: the exponent is rebiased by 127 - 15, the
 * fraction shifted up by 23 - 10, and subnormal halves (exponent field
 * 0) are normalised, since in binary32 they are normal numbers.
 */
#include <string.h>

#include "arenad_tflm_ops.h"

namespace arenad {

namespace {

constexpr uint32_t kHalfFracBits = 10;
constexpr uint32_t kFracShift = 23 - kHalfFracBits;
constexpr uint32_t kHalfFracMask = (1u << kHalfFracBits) - 1;
constexpr uint32_t kHalfExpMax = 0x1f;      /* infinity or NaN */
constexpr uint32_t kRebias = 127 - 15;
constexpr uint32_t kFloatExpMax = 0xffu << 23;
constexpr uint32_t kFloatQuiet = 1u << 22;  /* the quiet-NaN bit */

/* The bits of the float equal to frac * 2^-24 (a subnormal half's value;
 * frac nonzero, below 2^10), without the sign. */
uint32_t SubnormalBits(uint32_t frac) {
  /* frac * 2^-24 = 1.f * 2^(e-24), e the position of frac's top bit. */
  uint32_t exp = kRebias + 1; /* the exponent of 2^-14, the smallest normal */
  while (!(frac & (1u << kHalfFracBits))) {
    frac <<= 1;
    exp--;
  }
  return exp << 23 | (frac & kHalfFracMask) << kFracShift;
}

}  // namespace

float HalfToFloat(uint16_t half) {
  uint32_t sign = (uint32_t)(half & 0x8000u) << 16;
  uint32_t exp = (half >> kHalfFracBits) & kHalfExpMax;
  uint32_t frac = half & kHalfFracMask;
  uint32_t bits;
  if (exp == kHalfExpMax)
    bits = kFloatExpMax | frac << kFracShift | (frac ? kFloatQuiet : 0);
  else if (exp != 0)
    bits = (exp + kRebias) << 23 | frac << kFracShift;
  else
    bits = frac ? SubnormalBits(frac) : 0;
  bits |= sign;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace arenad
