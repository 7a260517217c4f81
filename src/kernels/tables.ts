/**
 * Decode tables: for every float type stored as codes, the float64 bit pattern of every code, built
 * once on first use from the generic decoder. NaN codes hold a canonical quiet NaN that keeps the
 * code's sign bit, so the sign survives without ever passing a NaN through a JS number.
 */
import { decodeFloat, isNegativeCode } from "../dtype/minifloat.js";
import type { DType } from "../dtype/table.js";

const tables = new Map<string, Uint32Array>();

/** Two words (low, high) per code: word 2c and 2c+1 are the float64 value of code c. */
export function decodeTableWords(t: DType): Uint32Array {
  let words = tables.get(t.name);
  if (!words) {
    const f = t.format;
    if (!f) throw new Error(`decodeTableWords: ${t.name} is not a coded float`);
    const codes = 2 ** t.bits;
    const values = new Float64Array(codes);
    words = new Uint32Array(values.buffer);
    for (let c = 0; c < codes; c++) {
      const v = decodeFloat(f, c);
      if (v === v) {
        values[c] = v;
      } else {
        words[2 * c] = 0;
        words[2 * c + 1] = (isNegativeCode(f, c) ? 0x80000000 : 0) | 0x7ff80000;
      }
    }
    tables.set(t.name, words);
  }
  return words;
}
