/**
 * Sub-byte layouts, exactly as ONNX raw_data stores them: elements form one little-endian bit
 * stream, element i occupying bits [i*bits, (i+1)*bits). For 4-bit types that is "element 0 in the
 * low nibble"; for 2-bit types "x0 | x1<<2 | x2<<4 | x3<<6"; for 6-bit types four elements fill three
 * bytes. Padding bits in the last byte are written as zero and ignored on read.
 */

/** Bytes needed for `count` elements of `bits` bits each. */
export function packedByteLength(count: number, bits: number): number {
  return Math.ceil((count * bits) / 8);
}

/** Reads the code of element `index`. */
export function readCode(bytes: Uint8Array, bits: number, index: number): number {
  const bit = index * bits;
  const at = bit >>> 3;
  const shift = bit & 7;
  const mask = (1 << bits) - 1;
  if (shift + bits <= 8) return (bytes[at] >>> shift) & mask;
  return ((bytes[at] | (bytes[at + 1] << 8)) >>> shift) & mask;
}

/**
 * Unpacks `count` codes starting at element `start` into `out[0..count)`. `start * bits` must be a
 * multiple of 8 (callers work in blocks of a multiple of 8 elements).
 */
export function unpackCodes(bytes: Uint8Array, bits: number, start: number, count: number, out: Uint8Array): void {
  const mask = (1 << bits) - 1;
  let bit = start * bits;
  for (let j = 0; j < count; j++, bit += bits) {
    const at = bit >>> 3;
    const shift = bit & 7;
    const word = shift + bits <= 8 ? bytes[at] : bytes[at] | (bytes[at + 1] << 8);
    out[j] = (word >>> shift) & mask;
  }
}

/**
 * Packs `codes[0..count)` as elements `start..start+count)` into `bytes`, which must be zero there.
 * `start * bits` must be a multiple of 8.
 */
export function packCodes(codes: Uint8Array, bits: number, start: number, count: number, bytes: Uint8Array): void {
  const mask = (1 << bits) - 1;
  let bit = start * bits;
  for (let j = 0; j < count; j++, bit += bits) {
    const at = bit >>> 3;
    const shift = bit & 7;
    const code = codes[j] & mask;
    bytes[at] |= code << shift;
    if (shift + bits > 8) bytes[at + 1] |= code >>> (8 - shift);
  }
}
