/**
 * The plain types ggml_quantize_chunk also writes: F32 (a bit copy), F16 (ggml_fp32_to_fp16_row:
 * nearest-even, NaN to 0x7E00 with its sign) and BF16 (ggml_fp32_to_bf16_row_ref: nearest-even,
 * NaN keeps its top half with the quiet bit set).
 *
 * Browser-safe: no Node built-ins.
 */
import { bf16OfBits, fp16Bits } from "../scalars.js";
import { put16, put32, type RowEncoder } from "./row.js";

/** A view of the input's bits: reading a NaN through a JS number may quiet it. */
function bitsOf(x: Float32Array, s: number, n: number): Uint32Array {
  return x.byteOffset % 4 === 0 ? new Uint32Array(x.buffer, x.byteOffset + 4 * s, n) : new Uint32Array(x.slice(s, s + n).buffer);
}

export const f32: RowEncoder = (x, s, n, y, o) => {
  const u = bitsOf(x, s, n);
  for (let j = 0; j < n; j++, o += 4) put32(y, o, u[j]);
};

export const f16: RowEncoder = (x, s, n, y, o) => {
  for (let j = 0; j < n; j++, o += 2) put16(y, o, fp16Bits(x[s + j]));
};

export const bf16: RowEncoder = (x, s, n, y, o) => {
  const u = bitsOf(x, s, n);
  for (let j = 0; j < n; j++, o += 2) put16(y, o, bf16OfBits(u[j]));
};
