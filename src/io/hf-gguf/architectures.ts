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
  /** Gemma 2: SentencePiece only, then add_space_prefix false. */
  | "gemma"
  /** Gemma 3: SentencePiece then add_space_prefix false, else tokenizer.json. */
  | "gemma3"
  /** Phi-3's own SentencePiece reading (Phi3MiniModel.set_vocab). */
  | "phi3";

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
  /** Which set_gguf_parameters: TextModel's (with LlamaModel's additions for llama) or the model's own. */
  readonly params: "text" | "phi3" | "gemma2" | "gemma3";
  /** Tensors convert_hf_to_gguf leaves out (Gemma's lm_head, llama.cpp ties it). */
  readonly skip?: readonly string[];
}

const LLAMA: HfArchitecture = { gguf: "llama", names: "llama", permuteQK: true, normPlusOne: false, vocab: "spm-or-bpe", addPrefixSpaceKey: true, params: "text" };
const PLAIN = { permuteQK: false, normPlusOne: false, addPrefixSpaceKey: false } as const;

/** HF `architectures[0]` -> how it converts. */
export const HF_ARCHITECTURES: Readonly<Record<string, HfArchitecture>> = {
  LlamaForCausalLM: LLAMA,
  MistralForCausalLM: LLAMA,
  Qwen2ForCausalLM: { ...PLAIN, gguf: "qwen2", names: "qwen2", vocab: "spm-or-bpe", params: "text" },
  Qwen3ForCausalLM: { ...PLAIN, gguf: "qwen3", names: "qwen3", vocab: "spm-or-bpe", params: "text" },
  Phi3ForCausalLM: { ...PLAIN, gguf: "phi3", names: "phi3", vocab: "phi3", params: "phi3" },
  Gemma2ForCausalLM: { ...PLAIN, gguf: "gemma2", names: "gemma2", normPlusOne: true, vocab: "gemma", params: "gemma2", skip: ["lm_head.weight"] },
  Gemma3ForCausalLM: { ...PLAIN, gguf: "gemma3", names: "gemma3", normPlusOne: true, vocab: "gemma3", params: "gemma3" },
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
