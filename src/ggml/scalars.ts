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
