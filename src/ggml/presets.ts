/**
 * llama-quantize's presets (tools/quantize/quantize.cpp QUANT_OPTIONS): the name a user types, the
 * llama_ftype stored as general.file_type, and the GGML type most tensors get
 * (llama_ftype_get_default_type). The per-tensor choices that make a preset a mix ("_M", "_S",
 * "_L") are src/io/gguf/quantize-plan.ts's.
 *
 * Browser-safe: no Node built-ins.
 */
import { TensorcastError } from "../errors.js";
import { ggmlType, type GgmlType, type GgmlTypeName } from "./types.js";

export interface LlamaPreset {
  /** llama-quantize's spelling (matched in any case). */
  readonly name: string;
  /** enum llama_ftype: general.file_type of the output. */
  readonly ftype: number;
  /** llama_ftype_get_default_type. */
  readonly defaultType: GgmlType;
  /** An alias's own name is another preset's ("Q4_K" is Q4_K_M). */
  readonly aliasOf?: string;
}

type Row = readonly [name: string, ftype: number, defaultType: GgmlTypeName, aliasOf?: string];

// In QUANT_OPTIONS' order. Q1_0, Q2_0 (no encoder here) and COPY (no quantization) are left out.
const ROWS: readonly Row[] = [
  ["Q4_0", 2, "Q4_0"], ["Q4_1", 3, "Q4_1"], ["MXFP4_MOE", 38, "MXFP4"], ["Q5_0", 8, "Q5_0"], ["Q5_1", 9, "Q5_1"],
  ["IQ2_XXS", 19, "IQ2_XXS"], ["IQ2_XS", 20, "IQ2_XS"], ["IQ2_S", 28, "IQ2_XS"], ["IQ2_M", 29, "IQ2_S"],
  ["IQ1_S", 24, "IQ1_S"], ["IQ1_M", 31, "IQ1_M"], ["TQ1_0", 36, "TQ1_0"], ["TQ2_0", 37, "TQ2_0"],
  ["Q2_K", 10, "Q2_K"], ["Q2_K_S", 21, "Q2_K"], ["IQ3_XXS", 23, "IQ3_XXS"], ["IQ3_S", 26, "IQ3_S"], ["IQ3_M", 27, "IQ3_S"],
  ["Q3_K", 12, "Q3_K", "Q3_K_M"], ["IQ3_XS", 22, "IQ3_S"], ["Q3_K_S", 11, "Q3_K"], ["Q3_K_M", 12, "Q3_K"], ["Q3_K_L", 13, "Q3_K"],
  ["IQ4_NL", 25, "IQ4_NL"], ["IQ4_XS", 30, "IQ4_XS"], ["Q4_K", 15, "Q4_K", "Q4_K_M"], ["Q4_K_S", 14, "Q4_K"], ["Q4_K_M", 15, "Q4_K"],
  ["Q5_K", 17, "Q5_K", "Q5_K_M"], ["Q5_K_S", 16, "Q5_K"], ["Q5_K_M", 17, "Q5_K"], ["Q6_K", 18, "Q6_K"], ["Q8_0", 7, "Q8_0"],
  ["F16", 1, "F16"], ["BF16", 32, "BF16"], ["F32", 0, "F32"],
];

/** Every preset, in llama-quantize's order. */
export const LLAMA_PRESETS: readonly LlamaPreset[] = Object.freeze(
  ROWS.map(([name, ftype, t, aliasOf]) => Object.freeze({ name, ftype, defaultType: ggmlType(t), ...(aliasOf ? { aliasOf } : {}) })),
);

/** enum llama_ftype values by name, for the rules that name them. */
export const FTYPE = Object.freeze({
  ALL_F32: 0, F16: 1, Q4_0: 2, Q4_1: 3, Q8_0: 7, Q5_0: 8, Q5_1: 9, Q2_K: 10, Q3_K_S: 11, Q3_K_M: 12, Q3_K_L: 13,
  Q4_K_S: 14, Q4_K_M: 15, Q5_K_S: 16, Q5_K_M: 17, Q6_K: 18, IQ2_XXS: 19, IQ2_XS: 20, Q2_K_S: 21, IQ3_XS: 22,
  IQ3_XXS: 23, IQ1_S: 24, IQ4_NL: 25, IQ3_S: 26, IQ3_M: 27, IQ2_S: 28, IQ2_M: 29, IQ4_XS: 30, IQ1_M: 31, BF16: 32,
  TQ1_0: 36, TQ2_0: 37, MXFP4_MOE: 38, Q2_0: 41,
} as const);

/**
 * The preset of a name in any case, or of an ftype number (as llama-quantize's try_parse_ftype
 * also takes "15"); an alias gives the preset it names (ftype and default type alike).
 * @example llamaPreset("q4_k_m").ftype // 15
 * @throws TensorcastError UNKNOWN_DTYPE listing the names.
 */
export function llamaPreset(name: string): LlamaPreset {
  const upper = typeof name === "string" ? name.toUpperCase() : "";
  const byName = LLAMA_PRESETS.find((p) => p.name === upper);
  if (byName) return byName;
  if (/^\d+$/.test(upper)) {
    const byFtype = LLAMA_PRESETS.find((p) => p.ftype === Number(upper) && p.aliasOf === undefined);
    if (byFtype) return byFtype;
  }
  throw new TensorcastError("UNKNOWN_DTYPE", `${JSON.stringify(String(name).slice(0, 100))} is not a llama-quantize preset; the presets are ${presetNames()}`);
}

/** The presets' names, comma-separated, for messages. */
export function presetNames(): string {
  return LLAMA_PRESETS.map((p) => p.name).join(", ");
}
