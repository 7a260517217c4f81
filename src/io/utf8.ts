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

/**
 * UTF-8 bytes of a string, a lone surrogate as U+FFFD (as TextEncoder, which the core's lib types
 * lack; the protobuf writer's utf8Bytes refuses one instead).
 * @example utf8Encode("\ud800a") // [0xef, 0xbf, 0xbd, 0x61]
 */
export function utf8Encode(s: string): Uint8Array {
  const out: number[] = [];
  for (const ch of s) {
    let c = ch.codePointAt(0)!;
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return Uint8Array.from(out);
}

// ES2022's lib has no TextDecoder (a Web and Node global); the sliver used is declared here.
interface Utf8Decoder {
  decode(input: Uint8Array): string;
}
declare const TextDecoder: new (label: string, options: { fatal: boolean; ignoreBOM: boolean }) => Utf8Decoder;

/**
 * The text of UTF-8 bytes, a byte-order mark kept as U+FEFF. `fatal`: a TypeError for bytes that
 * are not UTF-8; otherwise each bad sequence is U+FFFD (as Node's Buffer.toString("utf8") reads it).
 * @example utf8Decode(new Uint8Array([0x61, 0xff]), false) // "a\ufffd"
 */
export function utf8Decode(bytes: Uint8Array, fatal: boolean): string {
  const d = (fatal ? strict : lenient) ?? new TextDecoder("utf-8", { fatal, ignoreBOM: true });
  if (fatal) strict = d;
  else lenient = d;
  return d.decode(bytes);
}
let strict: Utf8Decoder | undefined;
let lenient: Utf8Decoder | undefined;
