/**
 * Decoders of sources of 16 bits or fewer whose every value is exact in float32: each writes the
 * float32 bit pattern castReference gives (NaN: the canonical quiet NaN with the code's sign) for
 * the first `n` elements of the source into an Int32Array (or the values into the Float32Array
 * view of the same memory). Plus the 256-entry table loops for 8-bit sources to other targets.
 *
 * Loops run from index 0 without offsets (see encode.ts); block callers pass subarrays. Narrow
 * sources are read 2 or 4 elements per 32-bit load when they start on a 4-byte boundary
 * (1.3x to 1.5x faster in V8 than element loads), else one element at a time.
 */

/** A 32-bit view of the first `words` whole words of a narrow array, if it starts on a 4-byte boundary. */
function wordsOf(a: Uint8Array | Uint16Array, words: number): Int32Array | undefined {
  return (a.byteOffset & 3) === 0 && words > 0 ? new Int32Array(a.buffer, a.byteOffset, words) : undefined;
}

/** float16 through a 65536-entry table of float32 bits. */
export function lut16ToF32(src: Uint16Array, out: Int32Array, n: number, lut: Int32Array): void {
  const pairs = n >>> 1;
  const w = wordsOf(src, pairs);
  let i = 0;
  if (w) {
    for (let p = 0; p < pairs; p++, i += 2) {
      const v = w[p];
      out[i] = lut[v & 0xffff];
      out[i + 1] = lut[v >>> 16];
    }
  }
  for (; i < n; i++) out[i] = lut[src[i]];
}

/** bfloat16 bits in the top half of a word -> float32 bits: themselves, or 0x7FC00000 with the sign for NaN. */
function bf16Bits(b: number): number {
  return (b & 0x7fffffff) > 0x7f800000 ? (b & 0x80000000) | 0x7fc00000 : b;
}

/** bfloat16: its bits are the top half of the float32. */
export function bf16ToF32(src: Uint16Array, out: Int32Array, n: number): void {
  const pairs = n >>> 1;
  const w = wordsOf(src, pairs);
  let i = 0;
  if (w) {
    for (let p = 0; p < pairs; p++, i += 2) {
      const v = w[p];
      out[i] = bf16Bits(v << 16);
      out[i + 1] = bf16Bits(v & 0xffff0000);
    }
  }
  for (; i < n; i++) out[i] = bf16Bits(src[i] << 16);
}

/** int16: exact in float32. */
export function int16ToF32(src: Int16Array, out: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = src[i];
}

/** uint16: exact in float32. */
export function uint16ToF32(src: Uint16Array, out: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) out[i] = src[i];
}

/** Packed 4-bit codes (two per byte, element 0 low) through a 16-entry table. */
export function lut4ToF32(src: Uint8Array, out: Int32Array, n: number, lut: Int32Array): void {
  const pairs = n >>> 1;
  let o = 0;
  for (let p = 0; p < pairs; p++, o += 2) {
    const b = src[p];
    out[o] = lut[b & 15];
    out[o + 1] = lut[b >>> 4];
  }
  if ((n & 1) === 1) out[o] = lut[src[pairs] & 15];
}

// 8-bit sources (int8 and bool viewed as bytes) to any non-packed target: one table entry per
// code, in unsigned words of the target's width. One function per width.

/** To 8-bit targets: four codes per 32-bit load and store when both arrays are aligned. */
export function byteLut8(src: Uint8Array, out: Uint8Array, n: number, lut: Uint8Array): void {
  const quads = n >>> 2;
  const ws = wordsOf(src, quads);
  const wo = ws ? wordsOf(out, quads) : undefined;
  let i = 0;
  if (ws && wo) {
    for (let q = 0; q < quads; q++, i += 4) {
      const v = ws[q];
      wo[q] = lut[v & 0xff] | (lut[(v >>> 8) & 0xff] << 8) | (lut[(v >>> 16) & 0xff] << 16) | (lut[v >>> 24] << 24);
    }
  }
  for (; i < n; i++) out[i] = lut[src[i]];
}

export function byteLut16(src: Uint8Array, out: Uint16Array, n: number, lut: Uint16Array): void {
  const quads = n >>> 2;
  const ws = wordsOf(src, quads);
  const wo = ws ? wordsOf(out, 2 * quads) : undefined;
  let i = 0;
  if (ws && wo) {
    for (let q = 0; q < quads; q++, i += 4) {
      const v = ws[q];
      wo[2 * q] = lut[v & 0xff] | (lut[(v >>> 8) & 0xff] << 16);
      wo[2 * q + 1] = lut[(v >>> 16) & 0xff] | (lut[v >>> 24] << 16);
    }
  }
  for (; i < n; i++) out[i] = lut[src[i]];
}

/** To 32-bit targets; also the decoder of 8-bit floats to float32 bits. */
export function byteLut32(src: Uint8Array, out: Int32Array, n: number, lut: Int32Array): void {
  const quads = n >>> 2;
  const ws = wordsOf(src, quads);
  let i = 0;
  if (ws) {
    for (let q = 0; q < quads; q++, i += 4) {
      const v = ws[q];
      out[i] = lut[v & 0xff];
      out[i + 1] = lut[(v >>> 8) & 0xff];
      out[i + 2] = lut[(v >>> 16) & 0xff];
      out[i + 3] = lut[v >>> 24];
    }
  }
  for (; i < n; i++) out[i] = lut[src[i]];
}

/** 64-bit targets: two words (low, high) per element and per table entry. */
export function byteLut64(src: Uint8Array, out: Uint32Array, n: number, lut: Uint32Array): void {
  for (let i = 0; i < n; i++) {
    const c = 2 * src[i];
    out[2 * i] = lut[c];
    out[2 * i + 1] = lut[c + 1];
  }
}
