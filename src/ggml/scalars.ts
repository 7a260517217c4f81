/**
 * The scalar decodings ggml's block types share: binary16 scales (exact, as
 * ggml_compute_fp16_to_fp32), GGML's MXFP4 exponent (ggml_e8m0_to_fp32_half) and NVFP4's UE4M3 scale
 * (ggml_ue4m3_to_fp32). The last two are GGML's own rules, not OCP's float8e8m0 / float8e4m3fn:
 * e = 0xFF is 2^127 here (OCP: NaN), and UE4M3 ignores bit 7 and reads 0x7F as zero.
 */
import { decodeFloat } from "../dtype/minifloat.js";
import { dtype } from "../dtype/table.js";

let halfTable: Float32Array | undefined;

/** Every binary16 code's float32 value (NaN codes are NaN), built once on first use. */
export function halfValues(): Float32Array {
  if (halfTable === undefined) {
    const f = dtype("float16").format!;
    halfTable = new Float32Array(65536);
    for (let c = 0; c < 65536; c++) halfTable[c] = decodeFloat(f, c);
  }
  return halfTable;
}

/**
 * ggml_e8m0_to_fp32_half: half of 2^(e - 127), as float32. e = 0 and 1 are the subnormals 2^-128 and
 * 2^-127; e = 255 is 2^127 (ggml has no NaN here). MXFP4's element table holds twice the E2M1 values,
 * so the product is the OCP value for every e below 255.
 */
export function e8m0Half(e: number): number {
  return 2 ** (e - 128);
}

/**
 * ggml_ue4m3_to_fp32: half of an unsigned E4M3 value (bias 7, subnormals man * 2^-9), as NVFP4's
 * decoder takes it. Bit 7 is not read, except that 0x7F (and 0) is zero: 0xFF is 240, 0x80 is 0.
 */
export function ue4m3Half(x: number): number {
  if (x === 0 || x === 0x7f) return 0;
  const exp = (x >> 3) & 0xf;
  const man = x & 7;
  return exp === 0 ? man * 2 ** -10 : (1 + man / 8) * 2 ** (exp - 8);
}

const bitsF = new Float32Array(1);
const bitsU = new Uint32Array(bitsF.buffer);

/** The binary32 bits of a float32 value. */
export function f32Bits(x: number): number {
  bitsF[0] = x;
  return bitsU[0];
}

/** The float32 value of binary32 bits. */
export function f32FromBits(u: number): number {
  bitsU[0] = u;
  return bitsF[0];
}

/** 2^112 and 2^-110: binary16's rounding point moved onto binary32's (FP16's scale_to_inf, scale_to_zero). */
const SCALE_TO_INF = 2 ** 112;
const SCALE_TO_ZERO = 2 ** -110;

/**
 * ggml_compute_fp32_to_fp16 (the FP16 library's rule, which ggml-base uses without F16C): binary32
 * to binary16 bits, nearest-even, overflow to Inf, every NaN to the quiet 0x7E00 with its sign
 * (the payload is dropped). The scaling by 2^112 and 2^-110 moves the rounding point to binary16's,
 * and the add of a power of two rounds the mantissa there in one float32 addition.
 */
export function fp16Bits(f: number): number {
  const fr = Math.fround;
  let base = fr(fr(Math.abs(f) * SCALE_TO_INF) * SCALE_TO_ZERO);
  const w = f32Bits(f);
  const shl1w = (w * 2) % 0x100000000;
  const sign = w & 0x80000000;
  let bias = shl1w - (shl1w % 0x1000000);
  if (bias < 0x71000000) bias = 0x71000000;
  base = fr(f32FromBits(bias / 2 + 0x07800000) + base);
  const bits = f32Bits(base);
  const nonsign = ((bits >>> 13) & 0x7c00) + (bits & 0xfff);
  return ((sign >>> 16) | (shl1w > 0xff000000 ? 0x7e00 : nonsign)) & 0xffff;
}

/**
 * ggml_compute_fp32_to_bf16: the top half of the binary32 bits, nearest-even; a NaN keeps its top
 * bits with the quiet bit forced (bit 6 of the half).
 */
export function bf16Bits(f: number): number {
  return bf16OfBits(f32Bits(f));
}

/** bf16Bits of the binary32 bits `u`. */
export function bf16OfBits(u: number): number {
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 64) & 0xffff;
  return ((u + 0x7fff + ((u >>> 16) & 1)) / 0x10000) & 0xffff;
}
