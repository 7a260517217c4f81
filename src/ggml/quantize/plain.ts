/**
 * The plain types ggml_quantize_chunk also writes: F32 (a bit copy), F16 (ggml_fp32_to_fp16_row:
 * nearest-even, NaN to 0x7E00 with its sign) and BF16 (ggml_fp32_to_bf16_row_ref: nearest-even,
 * NaN keeps its top half with the quiet bit set); F16 and BF16 through blocks-simd.ts's kernels
 * where they can.
 *
 * Browser-safe: no Node built-ins.
 */
import { bf16OfBits } from "../scalars.js";
import { encodeBlocksSimd } from "./blocks-simd.js";
import { put16, put32, type RowEncoder } from "./row.js";

/** A view of the input's bits: reading a NaN through a JS number may quiet it. */
function bitsOf(x: Float32Array, s: number, n: number): Uint32Array {
  return x.byteOffset % 4 === 0 ? new Uint32Array(x.buffer, x.byteOffset + 4 * s, n) : new Uint32Array(x.slice(s, s + n).buffer);
}

export const f32: RowEncoder = (x, s, n, y, o) => {
  const u = bitsOf(x, s, n);
  for (let j = 0; j < n; j++, o += 4) put32(y, o, u[j]);
};

/**
 * fp16Bits from the binary32 bits `u`, in integers: nearest-even on the rebiased exponent and
 * mantissa for normal halves, the value times 2^24 rounded to even for subnormal ones, Inf from
 * 65520 up, NaN to 0x7E00 with its sign (as ggml_fp32_to_fp16 gives).
 */
export function fp16OfBits(u: number): number {
  const sign = (u >>> 16) & 0x8000;
  const a = u & 0x7fffffff;
  if (a > 0x7f800000) return sign | 0x7e00;
  if (a >= 0x477ff000) return sign | 0x7c00;
  if (a >= 0x38800000) {
    const r = a - 0x38000000;
    return sign | ((r + 0xfff + ((r >>> 13) & 1)) >>> 13);
  }
  // Below 2^-14: the half's bits are the value in units of 2^-24; both products are exact.
  SCRATCH[0] = a;
  const m = SCRATCH_F[0] * 16777216;
  let h = Math.floor(m);
  const rem = m - h;
  if (rem > 0.5 || (rem === 0.5 && (h & 1) === 1)) h++;
  return sign | h;
}
const SCRATCH = new Uint32Array(1);
const SCRATCH_F = new Float32Array(SCRATCH.buffer);

export const f16: RowEncoder = (x, s, n, y, o) => {
  if (encodeBlocksSimd("F16", x, s, n, y, o)) return;
  const u = bitsOf(x, s, n);
  for (let j = 0; j < n; j++, o += 2) {
    const h = fp16OfBits(u[j]);
    y[o] = h & 0xff;
    y[o + 1] = h >>> 8;
  }
};

export const bf16: RowEncoder = (x, s, n, y, o) => {
  if (encodeBlocksSimd("BF16", x, s, n, y, o)) return;
  const u = bitsOf(x, s, n);
  for (let j = 0; j < n; j++, o += 2) put16(y, o, bf16OfBits(u[j]));
};
