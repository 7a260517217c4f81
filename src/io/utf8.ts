/**
 * UTF-8 well-formedness, byte by byte (Unicode's table 3-7, as WHATWG's decoder and Rust's str
 * apply it: no overlong forms, no surrogates, nothing above U+10FFFF). For readers that check
 * text as they walk it (the ONNX validator fed in pieces, the safetensors header scanner) rather
 * than decode it whole.
 */

/** What `utf8Lead` returns for a byte no sequence starts with (a continuation byte, 0xC0, 0xC1, 0xF5+). */
export const UTF8_BAD_LEAD = -1;

/**
 * For the first byte `b` (>= 0x80) of a multi-byte sequence: how many continuation bytes follow
 * (low 8 bits), and the range the first of them must fall in (bits 8-15 the lowest, 16-23 the
 * highest; the others are always 0x80..0xBF). Packed into one number so hot loops allocate nothing.
 */
export function utf8Lead(b: number): number {
  if (b >= 0xc2 && b <= 0xdf) return 1 | (0x80 << 8) | (0xbf << 16);
  if (b >= 0xe0 && b <= 0xef) return 2 | ((b === 0xe0 ? 0xa0 : 0x80) << 8) | ((b === 0xed ? 0x9f : 0xbf) << 16);
  if (b >= 0xf0 && b <= 0xf4) return 3 | ((b === 0xf0 ? 0x90 : 0x80) << 8) | ((b === 0xf4 ? 0x8f : 0xbf) << 16);
  return UTF8_BAD_LEAD;
}
