/**
 * The transformers model classes we convert to GGUF, and what llama.cpp's convert_hf_to_gguf.py
 * does differently for each: the GGUF architecture it writes, whether it interleaves the rotary
 * halves of Q and K (Llama and Mistral, whose HF checkpoints were un-interleaved from Meta's),
 * Gemma's norm offset, the hyperparameters it adds after the common ones, how it reads the
 * vocabulary, and how it merges a mixture-of-experts model's per-expert tensors.
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
  | "phi3"
  /** tokenizer.json (byte-level BPE) only, a tokenizer.model beside it unread (TextModel.set_vocab). */
  | "bpe";

/**
 * How convert_hf_to_gguf stacks a block's per-expert weights into one 3-D tensor each: it holds
 * back every tensor of a block whose name contains `marker` until the block has every weight of every expert of
 * them, then writes the merged tensors, in `weights` order, where the last one arrived.
 */
export interface HfExperts {
  /** convert_hf_to_gguf's test for an expert tensor: a substring of its name. */
  readonly marker: string;
  /** An expert's weight is `model.layers.{block}.{prefix}.{expert}.{weight}.weight`. */
  readonly prefix: string;
  /** The weights in the order the merged tensors are written, with their GGUF names. */
  readonly weights: readonly (readonly [hf: string, gguf: string])[];
  /** The router (`model.layers.{block}.{router}.weight`), which becomes ffn_gate_inp. */
  readonly router: string;
  /** config.json's keys for the number of experts, the first present taken. */
  readonly countKeys: readonly string[];
}

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
  /**
   * Which set_gguf_parameters: TextModel's (with LlamaModel's additions for llama), TextModel's
   * then Qwen2MoeModel's expert sizes, or the model's own.
   */
  readonly params: "text" | "qwen2moe" | "phi3" | "gemma2" | "gemma3";
  /** A mixture-of-experts model's merging; absent, a config naming experts is refused. */
  readonly experts?: HfExperts;
  /** gguf-py's tensor list for the architecture has no dense ffn_gate / ffn_up / ffn_down (qwen3moe). */
  readonly noDenseFfn?: boolean;
  /** Tensors convert_hf_to_gguf leaves out (Gemma's lm_head, llama.cpp ties it). */
  readonly skip?: readonly string[];
}

// LlamaModel converts Llama, Mistral and Mixtral alike: a folder with Mixtral's expert tensors is merged
const MIXTRAL_EXPERTS: HfExperts = {
  marker: "block_sparse_moe.experts",
  prefix: "block_sparse_moe.experts",
  weights: [["w1", "ffn_gate_exps"], ["w2", "ffn_down_exps"], ["w3", "ffn_up_exps"]],
  router: "block_sparse_moe.gate",
  countKeys: ["num_local_experts"],
};
// Qwen2MoeModel's: any name with "experts" in it is held back
const QWEN_MOE_EXPERTS: HfExperts = {
  marker: "experts",
  prefix: "mlp.experts",
  weights: [["down_proj", "ffn_down_exps"], ["gate_proj", "ffn_gate_exps"], ["up_proj", "ffn_up_exps"]],
  router: "mlp.gate",
  countKeys: ["num_local_experts", "num_experts"],
};

const LLAMA: HfArchitecture = { gguf: "llama", names: "llama", permuteQK: true, normPlusOne: false, vocab: "spm-or-bpe", addPrefixSpaceKey: true, params: "text", experts: MIXTRAL_EXPERTS };
const PLAIN = { permuteQK: false, normPlusOne: false, addPrefixSpaceKey: false } as const;

/** HF `architectures[0]` -> how it converts. */
export const HF_ARCHITECTURES: Readonly<Record<string, HfArchitecture>> = {
  LlamaForCausalLM: LLAMA,
  MistralForCausalLM: LLAMA,
  MixtralForCausalLM: LLAMA,
  Qwen2ForCausalLM: { ...PLAIN, gguf: "qwen2", names: "qwen2", vocab: "spm-or-bpe", params: "text" },
  Qwen3ForCausalLM: { ...PLAIN, gguf: "qwen3", names: "qwen3", vocab: "spm-or-bpe", params: "text" },
  // Qwen 3's attention and norm names; the experts merged, the router ffn_gate_inp
  Qwen3MoeForCausalLM: { ...PLAIN, gguf: "qwen3moe", names: "qwen3", vocab: "bpe", params: "qwen2moe", experts: QWEN_MOE_EXPERTS, noDenseFfn: true },
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
