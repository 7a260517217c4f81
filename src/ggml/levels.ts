/**
 * The published level tables of GGML's non-linear block types, shared by the reference decoders
 * (dequantize.ts) and the SIMD kernels (simd.ts). Browser-safe: no Node built-ins.
 */
import { decodeFloat } from "../dtype/minifloat.js";
import { dtype } from "../dtype/table.js";

/** kvalues_iq4nl: IQ4_NL's and IQ4_XS's sixteen non-linear levels (published by ggml, not derived). */
export const IQ4_NL_LEVELS: readonly number[] = Object.freeze([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113]);

/**
 * kvalues_mxfp4: twice the E2M1 value of each code (ggml doubles them so the scale can be halved).
 * The negative-zero code 8 is +0: GGML's MXFP4 and NVFP4 never give -0 from it, where OCP's does.
 */
export const GGML_FP4_DOUBLED: readonly number[] = Object.freeze(Array.from({ length: 16 }, (_, c) => {
  const v = 2 * decodeFloat(dtype("float4e2m1").format!, c);
  return v === 0 ? 0 : v;
}));
