/**
 * The transformers model classes we convert to GGUF, and what llama.cpp's convert_hf_to_gguf.py
 * does differently for each: the GGUF architecture it writes, whether it interleaves the rotary
 * halves of Q and K (Llama and Mistral, whose HF checkpoints were un-interleaved from Meta's),
 * Gemma's norm offset, the hyperparameters it adds after the common ones, and how it reads the
 * vocabulary.
 */
import { TensorcastError } from "../../errors.js";
import type { GgufHfArchitecture } from "../gguf-hf/architectures.js";

export type VocabKind =
  /** tokenizer.model when present (SentencePiece), else tokenizer.json (byte-level BPE). */
  | "spm-or-bpe"
  /** SentencePiece only (tokenizer.model). */
  | "spm";

export interface HfArchitecture {
  /** general.architecture. */
  readonly gguf: string;
  /** The name table (src/io/gguf-hf/names.ts) its tensors follow. */
  readonly names: GgufHfArchitecture;
  readonly permuteQK: boolean;
  /** Norm weights stored as 1 + w (Gemma's RMSNorm multiplies by 1 + w). */
  readonly normPlusOne: boolean;
  readonly vocab: VocabKind;
  /** tokenizer_config's add_prefix_space becomes tokenizer.ggml.add_space_prefix first (LlamaModel.set_vocab). */
  readonly addPrefixSpaceKey: boolean;
}

const LLAMA: HfArchitecture = { gguf: "llama", names: "llama", permuteQK: true, normPlusOne: false, vocab: "spm-or-bpe", addPrefixSpaceKey: true };

/** HF `architectures[0]` -> how it converts. */
export const HF_ARCHITECTURES: Readonly<Record<string, HfArchitecture>> = {
  LlamaForCausalLM: LLAMA,
  MistralForCausalLM: LLAMA,
  Qwen2ForCausalLM: { gguf: "qwen2", names: "qwen2", permuteQK: false, normPlusOne: false, vocab: "spm-or-bpe", addPrefixSpaceKey: false },
  Qwen3ForCausalLM: { gguf: "qwen3", names: "qwen3", permuteQK: false, normPlusOne: false, vocab: "spm-or-bpe", addPrefixSpaceKey: false },
};

/** The architecture of a config.json, or UNSUPPORTED_TYPE naming it and the ones we convert. */
export function hfArchitectureOf(config: unknown): { readonly className: string; readonly arch: HfArchitecture } {
  const list = typeof config === "object" && config !== null ? (config as { architectures?: unknown }).architectures : undefined;
  const className = Array.isArray(list) && typeof list[0] === "string" ? list[0] : undefined;
  const supported = Object.keys(HF_ARCHITECTURES).join(", ");
  if (className === undefined) {
    throw new TensorcastError("INVALID_DATA", `config.json has no "architectures" list naming the model class; convertible: ${supported}`);
  }
  const arch = Object.prototype.hasOwnProperty.call(HF_ARCHITECTURES, className) ? HF_ARCHITECTURES[className] : undefined;
  if (arch === undefined) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `model class "${className}" cannot be converted to GGUF; supported: ${supported}`);
  }
  return { className, arch };
}
