/**
 * ggml_validate_row_data (ggml-quants.c): the check llama.cpp makes on every tensor it reads with
 * check_tensors (as llama_model_quantize reads its input) and on every row it quantizes. Plain
 * floats must be finite; a block type's fp16 scales (d, and m or dmin where the block has one)
 * must be finite; MXFP4's exponent must not be 0xff; IQ1_M's scale, spread over the top nibbles of
 * its four scale words, must be finite; integers and NVFP4 always pass.
 *
 * Browser-safe: no Node built-ins.
 */
import type { GgmlType } from "./types.js";

/** What made a row invalid: the first bad element (plain types) or block, and why. */
export interface InvalidRow {
  readonly index: number;
  readonly reason: "inf" | "nan" | "exponent 0xff" | "no validation for the type";
}

const D = new Set(["Q4_0", "Q5_0", "Q8_0", "Q3_K", "Q6_K", "TQ1_0", "TQ2_0", "IQ1_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ4_XS", "IQ4_NL", "Q1_0", "Q2_0"]);
const DM: Readonly<Record<string, string>> = { Q4_1: "m", Q5_1: "m", Q2_K: "dmin", Q4_K: "dmin", Q5_K: "dmin" };

function fp16(h: number, index: number): InvalidRow | undefined {
  if ((h & 0x7c00) !== 0x7c00) return undefined;
  return { index, reason: (h & 0x3ff) === 0 ? "inf" : "nan" };
}

/**
 * Whether `bytes` (whole blocks of `t`, little-endian) pass ggml_validate_row_data; the first
 * failure otherwise.
 * @example validateRowData(ggmlType("F16"), new Uint8Array([0, 0x7c])) // { index: 0, reason: "inf" }
 */
export function validateRowData(t: GgmlType, bytes: Uint8Array): InvalidRow | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Math.floor(bytes.length / t.typeSize);
  const offsetOf = (name: string): number => t.fields.find((f) => f.name === name)?.offset ?? -1;
  switch (t.name) {
    case "F32":
    case "F64":
      for (let i = 0; i < n; i++) {
        const v = t.name === "F32" ? view.getFloat32(i * 4, true) : view.getFloat64(i * 8, true);
        if (v !== v) return { index: i, reason: "nan" };
        if (v === Infinity || v === -Infinity) return { index: i, reason: "inf" };
      }
      return undefined;
    case "F16":
      for (let i = 0; i < n; i++) {
        const bad = fp16(view.getUint16(i * 2, true), i);
        if (bad) return bad;
      }
      return undefined;
    case "BF16":
      // ggml counts NaNs before infinities over the whole row, so a row with both reports NaN.
      {
        let inf = -1;
        for (let i = 0; i < n; i++) {
          const h = view.getUint16(i * 2, true) & 0x7fff;
          if (h > 0x7f80) return { index: i, reason: "nan" };
          if (h === 0x7f80 && inf < 0) inf = i;
        }
        return inf >= 0 ? { index: inf, reason: "inf" } : undefined;
      }
    case "I8": case "I16": case "I32": case "I64": case "NVFP4":
      return undefined;
    case "MXFP4":
      for (let i = 0; i < n; i++) if (bytes[i * t.typeSize] === 0xff) return { index: i, reason: "exponent 0xff" };
      return undefined;
    case "Q8_K":
      for (let i = 0; i < n; i++) {
        const v = view.getFloat32(i * t.typeSize, true);
        if (v !== v) return { index: i, reason: "nan" };
        if (v === Infinity || v === -Infinity) return { index: i, reason: "inf" };
      }
      return undefined;
    case "IQ1_M": {
      const at = offsetOf("scales");
      for (let i = 0; i < n; i++) {
        const sc = (k: number): number => view.getUint16(i * t.typeSize + at + 2 * k, true);
        const bad = fp16((sc(0) >> 12) | ((sc(1) >> 8) & 0x00f0) | ((sc(2) >> 4) & 0x0f00) | (sc(3) & 0xf000), i);
        if (bad) return bad;
      }
      return undefined;
    }
  }
  if (D.has(t.name) || DM[t.name] !== undefined) {
    const d = offsetOf("d");
    const m = DM[t.name] !== undefined ? offsetOf(DM[t.name]) : -1;
    for (let i = 0; i < n; i++) {
      const bad = fp16(view.getUint16(i * t.typeSize + d, true), i) ?? (m >= 0 ? fp16(view.getUint16(i * t.typeSize + m, true), i) : undefined);
      if (bad) return bad;
    }
    return undefined;
  }
  // Q8_1: ggml's switch has no case for it.
  return { index: 0, reason: "no validation for the type" };
}
