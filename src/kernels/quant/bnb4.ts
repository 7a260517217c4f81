/**
 * bitsandbytes' 4-bit block quantization as onnxruntime implements it for MatMulBnb4
 * (onnxruntime/contrib_ops/cpu/quantization/blockwise_quant_block_bnb4.h, called by
 * matmul_bnb4_quantizer.py through `quantize_matmul_bnb4`), a rule of its own:
 *
 * - blocks of `blockSize` consecutive elements of the flattened tensor (the last one partial);
 *   absmax = the largest float32 magnitude (NaN skipped, as fmaxf does), stored as float32;
 * - each element times the float32 reciprocal 1 / absmax (0 for a zero block), rounded to float32,
 *   is coded by comparison with the float32 midpoints of the code table: NF4 (the normal-float
 *   table, codes ascending with value) or FP4 (sign bit 8, magnitude codes 0, 1, 6, 7, 4, 5, 2, 3
 *   for 0, 1/192, 1/6, 1/4, 1/3, 1/2, 2/3, 1); a value equal to a midpoint takes the lower code;
 * - two codes per byte, the first element in the HIGH nibble (unlike ONNX's int4 packing); an odd
 *   last element pairs with the code of 0.
 */

/** The two bnb4 data types, with MatMulBnb4's quant_type numbers (FP4 0, NF4 1). */
export type Bnb4Type = "nf4" | "fp4";

/** MatMulBnb4's quant_type attribute of each type. */
export const BNB4_QUANT_TYPE: Readonly<Record<Bnb4Type, number>> = { fp4: 0, nf4: 1 };

/** NF4: midpoints between consecutive values of bitsandbytes' NF4 table, as float32. */
const NF4_MIDPOINTS = [
  -0.8480964004993439, -0.6106329262256622, -0.4599952697753906, -0.33967943489551544, -0.23460740596055984,
  -0.13791173323988914, -0.045525018125772476, 0.03979014977812767, 0.1202552504837513, 0.2035212516784668,
  0.2920137718319893, 0.3893125355243683, 0.5016634166240692, 0.6427869200706482, 0.8614784181118011,
].map(Math.fround);

/** FP4 (bias 3, data in [-1, 1] after division by 12): magnitude midpoints, as float32. */
const FP4_MIDPOINTS = [0.00260417, 0.0859375, 0.20833333, 0.29166667, 0.4166667, 0.583333, 0.8333333].map(Math.fround);
const FP4_MAGNITUDE_CODES = [0b000, 0b001, 0b110, 0b111, 0b100, 0b101, 0b010, 0b011];

/** How many of the ascending `midpoints` lie strictly below `x` (0 for NaN). */
function above(x: number, midpoints: readonly number[]): number {
  let k = 0;
  while (k < midpoints.length && x > midpoints[k]) k++;
  return k;
}

/** The 4-bit code of a float32 value in [-1, 1]. */
export function bnb4Code(x: number, type: Bnb4Type): number {
  if (type === "nf4") return above(x, NF4_MIDPOINTS);
  return FP4_MAGNITUDE_CODES[above(Math.abs(x), FP4_MIDPOINTS)] + (x < 0 ? 8 : 0);
}

/**
 * Quantizes `x` (float32 values, already in the order the blocks run) in blocks of `blockSize`.
 * @example quantizeBnb4(Float32Array.from([1, -1]), 64, "nf4")  // { packed: [0xf0], absmax: [1] }
 */
export function quantizeBnb4(x: Float32Array, blockSize: number, type: Bnb4Type): { packed: Uint8Array; absmax: Float32Array } {
  const blocks = Math.ceil(x.length / blockSize);
  const packed = new Uint8Array(Math.ceil(x.length / 2));
  const absmax = new Float32Array(blocks);
  const zero = bnb4Code(0, type);
  for (let b = 0; b < blocks; b++) {
    const start = b * blockSize;
    const end = Math.min(start + blockSize, x.length);
    let amax = 0;
    for (let i = start; i < end; i++) {
      const a = Math.abs(x[i]);
      if (a > amax) amax = a;
    }
    absmax[b] = amax;
    const reciprocal = amax !== 0 ? Math.fround(1 / amax) : 0;
    for (let i = start; i < end; i += 2) {
      const hi = bnb4Code(Math.fround(x[i] * reciprocal), type);
      const lo = i + 1 < end ? bnb4Code(Math.fround(x[i + 1] * reciprocal), type) : zero;
      packed[i / 2] = (hi << 4) | lo;
    }
  }
  return { packed, absmax };
}
