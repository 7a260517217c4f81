/**
 * A planned tensor's stored bytes from the folder's raw bytes, as convert_hf_to_gguf.py makes
 * them: the source decoded to float32 (float16 and bfloat16 exactly), the transform applied in
 * float32, then numpy's astype(float16) for F16 (nearest-even; a NaN keeps its top payload bits,
 * unlike ggml's, which makes every NaN 0x7E00), gguf-py's BF16 (ggml's rule) or Q8_0 (gguf-py's
 * numpy quantizer, whose bytes are ggml's quantize_row_q8_0_ref's: quantizeRows), and the same
 * for TQ1_0 and TQ2_0 (gguf-py's float32 steps are quantize_row_tq1_0_ref's and tq2_0's).
 */
import { TensorcastError } from "../../errors.js";
import { quantizeRows } from "../../ggml/quantize/index.js";
import { bf16OfBits } from "../../ggml/scalars.js";
import type { HfGgufTensor } from "./plan.js";

const HALF = new Float32Array(65536);
for (let i = 0; i < 65536; i++) {
  const e = (i >> 10) & 0x1f;
  const m = i & 0x3ff;
  const v = e === 0 ? m * 2 ** -24 : e === 31 ? (m === 0 ? Infinity : NaN) : (1 + m / 1024) * 2 ** (e - 15);
  HALF[i] = i & 0x8000 ? -v : v;
}

/** The source's values as float32 (row-major), from its little-endian bytes. */
export function sourceValues(dtype: string, bytes: Uint8Array): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dtype === "float32") {
    // bit for bit (a NaN's payload too): words copied, not values
    const out = new Float32Array(bytes.byteLength / 4);
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < out.length; i++) u[i] = view.getUint32(4 * i, true);
    return out;
  }
  if (dtype === "float16" || dtype === "bfloat16") {
    const out = new Float32Array(bytes.byteLength / 2);
    const u = new Uint32Array(out.buffer);
    for (let i = 0; i < out.length; i++) {
      const h = view.getUint16(2 * i, true);
      if (dtype === "float16") out[i] = HALF[h]!;
      else u[i] = h << 16;
    }
    // a float16 NaN widened by numpy keeps its payload: (h & 0x3ff) << 13 under an all-ones exponent
    if (dtype === "float16") {
      for (let i = 0; i < out.length; i++) {
        const h = view.getUint16(2 * i, true);
        if ((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0) u[i] = ((h & 0x8000) << 16) | 0x7f800000 | ((h & 0x3ff) << 13);
      }
    }
    return out;
  }
  throw new TensorcastError("UNSUPPORTED_TYPE", `source dtype ${dtype}; convertible: float32, float16, bfloat16`);
}

/**
 * numpy's float32 -> float16 (npy_floatbits_to_halfbits) of the binary32 bits `u`: nearest-even,
 * overflow to Inf, a NaN's top payload bits kept (0x7F800001 -> 0x7C01). Bits, not a number: a
 * NaN read out of a Float32Array into a JS number may not keep its payload.
 */
export function numpyHalfBits(u: number): number {
  const sign = (u >>> 16) & 0x8000;
  const exp = u & 0x7f800000;
  if (exp >= 0x47800000) {
    if (exp === 0x7f800000) {
      const sig = u & 0x007fffff;
      if (sig !== 0) {
        let r = 0x7c00 + (sig >>> 13);
        if (r === 0x7c00) r++;
        return sign | r;
      }
      return sign | 0x7c00;
    }
    return sign | 0x7c00;
  }
  if (exp <= 0x38000000) {
    if (exp < 0x33000000) return sign;
    const e = exp >>> 23;
    let sig = 0x800000 + (u & 0x007fffff);
    // shift right by 126 - e with round to nearest even
    const shift = 126 - e;
    const halfway = 2 ** (shift - 1);
    const rem = sig % 2 ** shift;
    sig = Math.floor(sig / 2 ** shift);
    if (rem > halfway || (rem === halfway && (sig & 1) === 1)) sig += 1;
    return sign | sig;
  }
  let h = ((exp - 0x38000000) >>> 13) | ((u & 0x007fffff) >>> 13);
  const rem = u & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h += 1;
  return sign | h;
}

/**
 * The rows a chunk of `t` must hold a multiple of: a head's two rotary halves for a permuted Q or
 * K (the permutation stays inside a head), else 1.
 */
export function rowGroup(t: HfGgufTensor): number {
  return t.transform.kind === "permute-rotary" ? (t.shape[0] ?? 1) / t.transform.heads : 1;
}

// the shape of one part: merged experts' without the expert dimension
const partShape = (t: HfGgufTensor): readonly number[] => (t.parts.length > 1 ? t.shape.slice(1) : t.shape);

/** Values per row of `t` (a 1-D tensor is one row; merged experts' rows are each expert's). */
export function rowLength(t: HfGgufTensor): number {
  const s = partShape(t);
  return s.length <= 1 ? (s[0] ?? 1) : s.slice(1).reduce((a, b) => a * b, 1);
}

/** The rows stored of each of `t`'s parts (the rows a plan keeps: Gemma 3's embedding past its vocabulary is not). */
export function partRows(t: HfGgufTensor): number {
  const s = partShape(t);
  return s.length <= 1 ? 1 : (s[0] ?? 0);
}

/**
 * The float32 values after the tensor's transform (a new array unless it is the identity), for
 * `values` holding whole rows of it, a multiple of rowGroup(t).
 */
export function transformValues(t: HfGgufTensor, values: Float32Array): Float32Array {
  const tr = t.transform;
  if (tr.kind === "identity") return values;
  if (tr.kind === "plus-one") {
    const out = new Float32Array(values.length);
    for (let i = 0; i < values.length; i++) out[i] = values[i]! + 1;
    return out;
  }
  const rowLen = rowLength(t);
  const rows = rowLen === 0 ? 0 : values.length / rowLen;
  const half = rowGroup(t) / 2;
  const heads = rows / (2 * half);
  const out = new Float32Array(values.length);
  // (heads, 2, half, ...) -> swap the middle two axes -> (heads, half, 2, ...)
  for (let h = 0; h < heads; h++) {
    const base = h * 2 * half;
    for (let j = 0; j < 2; j++) {
      for (let i = 0; i < half; i++) {
        const src = (base + j * half + i) * rowLen;
        out.set(values.subarray(src, src + rowLen), (base + i * 2 + j) * rowLen);
      }
    }
  }
  return out;
}

/**
 * The bytes the GGUF stores for `t`, from its parts' raw little-endian bytes (`bytesOf` gives a
 * folder tensor's by name): all of each, or whole leading rows (a plan may keep only those: Gemma
 * 3's embedding past its vocabulary). Merged experts are stored one expert after another.
 */
export function encodeTensor(t: HfGgufTensor, bytesOf: (name: string) => Uint8Array): Uint8Array {
  if (t.generated !== undefined) return encodeGenerated(t);
  const n = partRows(t) * rowLength(t);
  const chunks = t.parts.map((p) => {
    const all = sourceValues(p.dtype, bytesOf(p.name));
    if (all.length < n) throw new TensorcastError("SHAPE_MISMATCH", `tensor ${p.name}: ${all.length} values for a shape of [${partShape(t).join(", ")}]`);
    return encodeRows(t, all.length === n ? all : all.subarray(0, n));
  });
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * The stored bytes of whole rows of one of `t`'s parts (a multiple of rowGroup(t) of them, in
 * order), from their source bytes in `dtype`: the same bytes, chunk by chunk, part by part, as
 * encodeTensor gives for the whole tensor.
 */
export function encodeRowChunk(t: HfGgufTensor, sourceBytes: Uint8Array, dtype: string): Uint8Array {
  const values = sourceValues(dtype, sourceBytes);
  const len = rowLength(t);
  const group = rowGroup(t) * len;
  if (group > 0 && values.length % group !== 0) {
    throw new TensorcastError("SHAPE_MISMATCH", `tensor ${t.source}: a chunk of ${values.length} values is not whole groups of ${group}`);
  }
  return encodeRows(t, values);
}

/** The stored bytes of a generated tensor (plan.ts: rope_freqs). */
export function encodeGenerated(t: HfGgufTensor): Uint8Array {
  if (t.generated === undefined) throw new TensorcastError("INTERNAL", `tensor ${t.name} is not a generated one`);
  return encodeRows(t, t.generated);
}

function encodeRows(t: HfGgufTensor, raw: Float32Array): Uint8Array {
  const values = transformValues(t, raw);
  switch (t.type) {
    case "F32": {
      const out = new Uint8Array(values.length * 4);
      const v = new DataView(out.buffer);
      const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
      for (let i = 0; i < values.length; i++) v.setUint32(4 * i, bits[i]!, true);
      return out;
    }
    case "F16":
    case "BF16": {
      const out = new Uint8Array(values.length * 2);
      const v = new DataView(out.buffer);
      const bits = new Uint32Array(values.buffer, values.byteOffset, values.length);
      for (let i = 0; i < values.length; i++) v.setUint16(2 * i, t.type === "F16" ? numpyHalfBits(bits[i]!) : bf16OfBits(bits[i]!), true);
      return out;
    }
    case "Q8_0":
    case "TQ1_0":
    case "TQ2_0":
      return quantizeRows(t.type, values, t.shape[t.shape.length - 1] ?? 1);
  }
}
