/**
 * GGUF tensor names -> transformers' state-dict names: the inverse of llama.cpp's tensor map for
 * the decoder-only models we convert. Shapes carry over unchanged (both are row-major); a tensor
 * with no transformers counterpart (rope_freqs, ...) is left out, as transformers leaves it out.
 */
import type { GgufHfArchitecture } from "./architectures.js";

const GLOBAL: Readonly<Record<string, string>> = {
  "token_embd.weight": "model.embed_tokens.weight",
  "output_norm.weight": "model.norm.weight",
  "output.weight": "lm_head.weight",
};

type BlockMap = Readonly<Record<string, string>>;

const LLAMA_BLOCK: BlockMap = {
  attn_norm: "input_layernorm",
  attn_q: "self_attn.q_proj",
  attn_k: "self_attn.k_proj",
  attn_v: "self_attn.v_proj",
  attn_output: "self_attn.o_proj",
  ffn_norm: "post_attention_layernorm",
  ffn_gate: "mlp.gate_proj",
  ffn_up: "mlp.up_proj",
  ffn_down: "mlp.down_proj",
};

const QWEN3_BLOCK: BlockMap = { ...LLAMA_BLOCK, attn_q_norm: "self_attn.q_norm", attn_k_norm: "self_attn.k_norm" };

// Gemma 2 and 3 norm both sides of each sublayer: GGUF's ffn_norm is the pre-FFN one
const GEMMA2_BLOCK: BlockMap = {
  ...LLAMA_BLOCK,
  post_attention_norm: "post_attention_layernorm",
  ffn_norm: "pre_feedforward_layernorm",
  post_ffw_norm: "post_feedforward_layernorm",
};

const GEMMA3_BLOCK: BlockMap = { ...GEMMA2_BLOCK, attn_q_norm: "self_attn.q_norm", attn_k_norm: "self_attn.k_norm" };

// Phi-3 keeps Q, K, V in one matrix and gate, up in another, in both formats
const PHI3_BLOCK: BlockMap = {
  attn_norm: "input_layernorm",
  attn_qkv: "self_attn.qkv_proj",
  attn_output: "self_attn.o_proj",
  ffn_norm: "post_attention_layernorm",
  ffn_up: "mlp.gate_up_proj",
  ffn_down: "mlp.down_proj",
};

const BLOCKS: Record<GgufHfArchitecture, BlockMap> = {
  llama: LLAMA_BLOCK,
  qwen2: LLAMA_BLOCK,
  qwen3: QWEN3_BLOCK,
  gemma2: GEMMA2_BLOCK,
  gemma3: GEMMA3_BLOCK,
  phi3: PHI3_BLOCK,
};

const BLOCK_NAME = /^blk\.(0|[1-9][0-9]{0,8})\.([a-z0-9_]+)\.(weight|bias)$/;

/**
 * The transformers name of a GGUF tensor, or undefined when transformers has none. Block numbers
 * at or past `layers` have no transformers counterpart.
 */
export function hfTensorName(arch: GgufHfArchitecture, ggufName: string, layers: number): string | undefined {
  const global = GLOBAL[ggufName];
  if (global !== undefined) return global;
  const m = BLOCK_NAME.exec(ggufName);
  if (m === null) return undefined;
  const block = Number(m[1]);
  const part = BLOCKS[arch][m[2]!];
  if (part === undefined || block >= layers) return undefined;
  return `model.layers.${block}.${part}.${m[3]}`;
}

const HF_BLOCK_NAME = /^model\.layers\.(0|[1-9][0-9]{0,8})\.([a-z0-9_.]+)\.(weight|bias)$/;

/**
 * The GGUF name of a transformers tensor, or undefined when llama.cpp's map has none: the same
 * table read the other way, so both directions name every tensor alike.
 * @example ggufTensorName("llama", "model.layers.3.self_attn.q_proj.weight") // "blk.3.attn_q.weight"
 */
export function ggufTensorName(arch: GgufHfArchitecture, hfName: string): string | undefined {
  for (const [gguf, hf] of Object.entries(GLOBAL)) if (hf === hfName) return gguf;
  const m = HF_BLOCK_NAME.exec(hfName);
  if (m === null) return undefined;
  for (const [gguf, hf] of Object.entries(BLOCKS[arch])) if (hf === m[2]) return `blk.${m[1]}.${gguf}.${m[3]}`;
  return undefined;
}
