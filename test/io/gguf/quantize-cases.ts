/**
 * The cases of the GGUF quantization tests: a model (gguf-quant-models.ts), a preset and options,
 * both as `tensorcast quantize` arguments and as llama_model_quantize's parameters, so the peer
 * test (quantize-peer.test.ts), the golden maker (make-quantize-golden.ts) and the everyday golden
 * test (quantize-golden.test.ts) run the same list.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { llamaPreset } from "../../../src/ggml/presets.js";
import { legacyImatrix, legacyImatrixForPeer, writeQuantModel, type QuantModelName, type QuantModelVocab } from "../../support/gguf-quant-models.js";
import type { LlamaQuantizeOptions } from "../../support/llama-quant-peer.js";

export interface QuantCase {
  readonly id: string;
  /** "wide-q8_0" is wide quantized with Q8_0 first (the requantize case). */
  readonly model: QuantModelName | "wide-q8_0";
  readonly preset: string;
  /** CLI options after IN --mode PRESET -o OUT. */
  readonly args: readonly string[];
  /** llama_model_quantize's options besides the ftype. */
  readonly peer: Omit<LlamaQuantizeOptions, "ftype" | "imatrix" | "kvOverrides">;
  readonly imatrix?: boolean;
  /** In the everyday suite's golden check (small and quick). */
  readonly everyday: boolean;
}

const PLAIN_PRESETS = [
  "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K",
  "IQ4_NL", "IQ4_XS", "IQ3_S", "IQ3_M", "TQ1_0", "TQ2_0", "MXFP4_MOE", "F16", "BF16", "F32",
];
/** The presets llama.cpp makes only with an importance matrix (where rows are whole 256-blocks). */
export const IMATRIX_PRESETS = ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M", "IQ3_XXS", "IQ3_XS", "Q2_K_S"];
const WIDE_EVERYDAY = new Set(["Q4_K_M", "Q3_K_S", "IQ4_XS", "F16"]);
const DEEP_EVERYDAY = new Set(["Q4_0", "Q2_K", "Q3_K_M", "Q4_K_S", "Q4_K_M", "Q5_K_M", "IQ4_NL", "IQ3_M", "TQ1_0", "MXFP4_MOE", "BF16", "IQ2_XXS", "Q2_K_S"]);

function cases(): QuantCase[] {
  const out: QuantCase[] = [];
  for (const p of PLAIN_PRESETS) out.push({ id: `wide-${p}`, model: "wide", preset: p, args: [], peer: {}, everyday: WIDE_EVERYDAY.has(p) });
  // deep's rows (32, 64) fit no 256-block: every IQ preset falls back and needs no matrix.
  for (const p of [...PLAIN_PRESETS, ...IMATRIX_PRESETS]) out.push({ id: `deep-${p}`, model: "deep", preset: p, args: [], peer: {}, everyday: DEEP_EVERYDAY.has(p) });
  for (const p of [...IMATRIX_PRESETS, "Q4_K_M", "IQ4_NL"]) out.push({ id: `wide-${p}-imatrix`, model: "wide", preset: p, args: [], peer: {}, imatrix: true, everyday: p === "IQ2_XS" });
  for (const p of ["Q4_0", "Q5_0", "IQ4_XS", "IQ3_XXS"]) out.push({ id: `deep-${p}-imatrix`, model: "deep", preset: p, args: [], peer: {}, imatrix: true, everyday: p === "Q4_0" });
  const opt = (id: string, model: QuantCase["model"], preset: string, args: string[], peer: QuantCase["peer"], everyday = true): void => {
    out.push({ id, model, preset, args, peer, everyday });
  };
  opt("wide-Q4_K_M-leave-output", "wide", "Q4_K_M", ["--leave-output-tensor"], { leaveOutputTensor: true });
  opt("wide-Q4_K_M-output-f16", "wide", "Q4_K_M", ["--output-tensor-type", "f16"], { outputTensorType: "F16" }, false);
  opt("wide-Q5_K_S-embd-q8_0", "wide", "Q5_K_S", ["--token-embedding-type", "Q8_0"], { tokenEmbeddingType: "Q8_0" }, false);
  opt("wide-Q3_K_M-pure", "wide", "Q3_K_M", ["--pure"], { pure: true }, false);
  opt("wide-Q4_K_M-tensor-type", "wide", "Q4_K_M", ["--tensor-type", "attn_v=q8_0", "--tensor-type", "FFN_UP=q5_k"], { tensorTypes: [{ pattern: "attn_v", type: "Q8_0" }, { pattern: "ffn_up", type: "Q5_K" }] }, false);
  opt("deep-Q4_K_M-tensor-type", "deep", "Q4_K_M", ["--tensor-type", "blk\\.1[0-5]\\.attn_q=q6_k,ffn_gate=iq4_nl"], { tensorTypes: [{ pattern: "blk\\.1[0-5]\\.attn_q", type: "Q6_K" }, { pattern: "ffn_gate", type: "IQ4_NL" }] });
  opt("deep-Q6_K-output-q4_0", "deep", "Q6_K", ["--output-tensor-type", "q4_0"], { outputTensorType: "Q4_0" });
  opt("deep-F16-embd-q8_0", "deep", "F16", ["--token-embedding-type", "q8_0"], { tokenEmbeddingType: "Q8_0" });
  opt("wide-q8_0-Q4_K_M-requantize", "wide-q8_0", "Q4_K_M", ["--allow-requantize"], { allowRequantize: true }, false);
  opt("wide-q8_0-F16-requantize", "wide-q8_0", "F16", ["--allow-requantize"], { allowRequantize: true }, false);
  return out;
}

export const QUANT_CASES: readonly QuantCase[] = cases();

/** The columns of each tensor llama-imatrix collects for a model: every block weight and output.weight (not the token embedding: GET_ROWS). */
export function imatrixEntries(model: QuantModelName): { name: string; columns: number }[] {
  const wide = model === "wide";
  const embd = wide ? 256 : 32;
  const ff = wide ? 80 : 64;
  const layers = wide ? 2 : 16;
  const out: { name: string; columns: number }[] = [];
  for (let i = 0; i < layers; i++) {
    for (const t of ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up"]) out.push({ name: `blk.${i}.${t}.weight`, columns: embd });
    out.push({ name: `blk.${i}.ffn_down.weight`, columns: ff });
  }
  if (wide) out.push({ name: "output.weight", columns: embd });
  return out;
}

/**
 * The weights llama-quantize hands llama_model_quantize for a legacy .dat (sums / ncall in
 * float32), computed here from the entries, apart from tensorcast's reader, and its kv overrides.
 */
export function peerImatrix(model: QuantModelName, path: string): { imatrix: Map<string, Float32Array>; kvOverrides: NonNullable<LlamaQuantizeOptions["kvOverrides"]> } {
  return legacyImatrixForPeer(legacyImatrix(imatrixEntries(model)), path);
}

/**
 * A folder with the models (and the requantize input, made by `makeQ8`) and the imatrix files,
 * made the working directory: the output stores the imatrix path as given (quantize.imatrix.file),
 * so it is given relative, the same on every machine. `restore()` goes back.
 */
export async function caseFolder(makeQ8: (input: string, output: string) => Promise<void>, vocab: QuantModelVocab = "llama"): Promise<{ dir: string; input(c: QuantCase): string; imatrixPath(c: QuantCase): string; restore(): void }> {
  const dir = mkdtempSync(join(tmpdir(), "tensorcast-gguf-quant-"));
  for (const m of ["wide", "deep"] as const) {
    await writeQuantModel(m, join(dir, `${m}.gguf`), vocab);
    writeFileSync(join(dir, `${m}.imatrix.dat`), legacyImatrix(imatrixEntries(m)));
  }
  await makeQ8(join(dir, "wide.gguf"), join(dir, "wide-q8_0.gguf"));
  const before = process.cwd();
  process.chdir(dir);
  return {
    dir,
    restore: () => process.chdir(before),
    input: (c) => join(dir, `${c.model}.gguf`),
    // The path as given is stored in the output (quantize.imatrix.file): the same for both.
    imatrixPath: (c) => `${c.model === "deep" ? "deep" : "wide"}.imatrix.dat`,
  };
}

/** The llama_ftype of a case's preset. */
export function ftypeOf(c: QuantCase): number {
  return llamaPreset(c.preset).ftype;
}
