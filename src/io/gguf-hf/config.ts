/**
 * config.json from GGUF metadata, as transformers writes it after loading the file with
 * `from_pretrained(DIR, gguf_file=...)`: the keys its GGUF mapping reads from the file, then
 * every other key its config class writes, at that class's default.
 */
import { TensorcastError } from "../../errors.js";
import { HF_MODEL, type GgufHfArchitecture } from "./architectures.js";
import { getCount, getNumber, getString, getStrings, type GgufMetadata, type GgufTensorInfo } from "./metadata.js";

/** A config.json value. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [k: string]: JsonValue };
export type JsonObject = { [k: string]: JsonValue };

/** The sizes and ids every architecture's config has, at its class's default. */
interface ClassDefaults {
  readonly vocab_size: number;
  readonly hidden_size: number;
  readonly intermediate_size: number;
  readonly num_hidden_layers: number;
  readonly num_attention_heads: number;
  readonly max_position_embeddings: number;
  readonly rms_norm_eps: number;
  readonly rope_theta: number;
  readonly bos_token_id: number | null;
  readonly eos_token_id: number | null;
  readonly pad_token_id: number | null;
  readonly sliding_window?: number | null;
  readonly head_dim?: number;
  /** Keys written at their default whatever the file says. */
  readonly fixed: JsonObject;
}

const DEFAULTS: Record<GgufHfArchitecture, ClassDefaults> = {
  llama: {
    vocab_size: 32000, hidden_size: 4096, intermediate_size: 11008, num_hidden_layers: 32, num_attention_heads: 32,
    max_position_embeddings: 2048, rms_norm_eps: 1e-6, rope_theta: 10000, bos_token_id: 1, eos_token_id: 2,
    pad_token_id: null,
    fixed: { attention_bias: false, attention_dropout: 0, hidden_act: "silu", initializer_range: 0.02, mlp_bias: false, pretraining_tp: 1, use_cache: true },
  },
  qwen2: {
    vocab_size: 151936, hidden_size: 4096, intermediate_size: 22016, num_hidden_layers: 32, num_attention_heads: 32,
    max_position_embeddings: 32768, rms_norm_eps: 1e-6, rope_theta: 10000, bos_token_id: null, eos_token_id: null,
    pad_token_id: null, sliding_window: null,
    fixed: { attention_dropout: 0, hidden_act: "silu", initializer_range: 0.02, max_window_layers: 28, use_cache: true, use_sliding_window: false },
  },
  qwen3: {
    vocab_size: 151936, hidden_size: 4096, intermediate_size: 22016, num_hidden_layers: 32, num_attention_heads: 32,
    max_position_embeddings: 32768, rms_norm_eps: 1e-6, rope_theta: 10000, bos_token_id: null, eos_token_id: null,
    pad_token_id: null, sliding_window: null, head_dim: 128,
    fixed: { attention_bias: false, attention_dropout: 0, hidden_act: "silu", initializer_range: 0.02, max_window_layers: 28, use_cache: true, use_sliding_window: false },
  },
  gemma2: {
    vocab_size: 256000, hidden_size: 2304, intermediate_size: 9216, num_hidden_layers: 26, num_attention_heads: 8,
    max_position_embeddings: 8192, rms_norm_eps: 1e-6, rope_theta: 10000, bos_token_id: 2, eos_token_id: 1,
    pad_token_id: 0, sliding_window: 4096, head_dim: 256,
    fixed: {
      attention_bias: false, attention_dropout: 0, attn_logit_softcapping: 50, final_logit_softcapping: 30,
      hidden_activation: "gelu_pytorch_tanh", initializer_range: 0.02, query_pre_attn_scalar: 256,
      use_bidirectional_attention: null, use_cache: true,
    },
  },
  gemma3: {
    vocab_size: 262208, hidden_size: 2304, intermediate_size: 9216, num_hidden_layers: 26, num_attention_heads: 8,
    max_position_embeddings: 131072, rms_norm_eps: 1e-6, rope_theta: 1000000, bos_token_id: 2, eos_token_id: 1,
    pad_token_id: 0, sliding_window: 4096, head_dim: 256,
    fixed: {
      _sliding_window_pattern: 6, attention_bias: false, attention_dropout: 0, attn_logit_softcapping: null,
      final_logit_softcapping: null, hidden_activation: "gelu_pytorch_tanh", initializer_range: 0.02,
      query_pre_attn_scalar: 256, use_bidirectional_attention: false, use_cache: true,
    },
  },
  phi3: {
    vocab_size: 32064, hidden_size: 3072, intermediate_size: 8192, num_hidden_layers: 32, num_attention_heads: 32,
    max_position_embeddings: 4096, rms_norm_eps: 1e-5, rope_theta: 10000, bos_token_id: 1, eos_token_id: 32000,
    pad_token_id: 32000, sliding_window: null,
    fixed: { attention_dropout: 0, embd_pdrop: 0, hidden_act: "silu", initializer_range: 0.02, original_max_position_embeddings: 4096, resid_pdrop: 0, use_cache: true },
  },
};

/** Options for what the folder will hold. */
export interface HfConfigOptions {
  /** The dtype the safetensors will be written in ("float32" is what transformers' own GGUF loading gives). */
  readonly dtype?: "float32" | "bfloat16" | "float16";
  /** Written as transformers_version; the version whose output this matches by default. */
  readonly transformersVersion?: string;
}

export const MATCHED_TRANSFORMERS_VERSION = "5.18.0";

/**
 * config.json (as an object with sorted keys) for a file of a supported architecture.
 *
 * Where transformers' GGUF mapping leaves a key out (Qwen3's head_dim), transformers keeps the
 * class default even when the file says otherwise; we take the file's attention.key_length, which
 * gives the same config for every Qwen3 checkpoint (all have 128) and a loadable one for others.
 */
export function hfConfig(
  arch: GgufHfArchitecture,
  meta: GgufMetadata,
  tensors: readonly GgufTensorInfo[],
  options: HfConfigOptions = {},
): JsonObject {
  const d = DEFAULTS[arch];
  const key = (k: string): string => `${arch}.${k}`;
  const count = (k: string, dflt: number): number => getCount(meta, key(k)) ?? dflt;
  const num = (k: string, dflt: number): number => getNumber(meta, key(k)) ?? dflt;
  const tokenId = (k: string, dflt: number | null): number | null => getCount(meta, `tokenizer.ggml.${k}`) ?? dflt;

  const heads = count("attention.head_count", d.num_attention_heads);
  const hidden = count("embedding_length", d.hidden_size);
  const layers = count("block_count", d.num_hidden_layers);
  const tokens = getStrings(meta, "tokenizer.ggml.tokens");
  const c: JsonObject = {
    ...d.fixed,
    architectures: [HF_MODEL[arch].className],
    model_type: HF_MODEL[arch].modelType,
    vocab_size: getCount(meta, key("vocab_size")) ?? tokens?.length ?? d.vocab_size,
    hidden_size: hidden,
    intermediate_size: count("feed_forward_length", d.intermediate_size),
    num_hidden_layers: layers,
    num_attention_heads: heads,
    num_key_value_heads: count("attention.head_count_kv", heads),
    max_position_embeddings: count("context_length", d.max_position_embeddings),
    rms_norm_eps: num("attention.layer_norm_rms_epsilon", d.rms_norm_eps),
    bos_token_id: tokenId("bos_token_id", d.bos_token_id),
    eos_token_id: tokenId("eos_token_id", d.eos_token_id),
    pad_token_id: tokenId("padding_token_id", d.pad_token_id),
    // llama.cpp writes the output projection only when it is not the embedding matrix
    tie_word_embeddings: !tensors.some((t) => t.name === "output.weight"),
    dtype: options.dtype ?? "float32",
    transformers_version: options.transformersVersion ?? MATCHED_TRANSFORMERS_VERSION,
  };
  const unk = getCount(meta, "tokenizer.ggml.unknown_token_id");
  if (unk !== undefined) c.unk_token_id = unk;
  const name = getString(meta, "general.name");
  if (name !== undefined) c._model_name_or_path = name;
  if (heads === 0 || hidden % heads !== 0) {
    if (d.head_dim === undefined && getCount(meta, key("rope.dimension_count")) === undefined) {
      throw new TensorcastError("INVALID_DATA", `GGUF ${arch} has embedding_length ${hidden} and ${heads} heads; the head size is not a whole number`);
    }
  }
  const ropeTheta = num("rope.freq_base", d.rope_theta);
  switch (arch) {
    case "llama":
      // transformers reads llama's head_dim from the rotary width
      c.head_dim = count("rope.dimension_count", hidden / heads);
      c.rope_parameters = { rope_theta: ropeTheta, rope_type: "default" };
      break;
    case "qwen2":
      c.layer_types = Array.from({ length: layers }, () => "full_attention");
      c.sliding_window = d.sliding_window ?? null;
      c.rope_parameters = { rope_theta: ropeTheta, rope_type: "default" };
      break;
    case "qwen3":
      c.head_dim = count("attention.key_length", d.head_dim ?? 128);
      c.layer_types = Array.from({ length: layers }, () => "full_attention");
      c.sliding_window = d.sliding_window ?? null;
      c.rope_parameters = { rope_theta: ropeTheta, rope_type: "default" };
      break;
    case "gemma2":
      c.head_dim = count("attention.key_length", d.head_dim ?? 256);
      c.sliding_window = count("attention.sliding_window", d.sliding_window ?? 4096);
      // Gemma 2 alternates: sliding window first, then full attention
      c.layer_types = Array.from({ length: layers }, (_, i) => ((i + 1) % 2 === 0 ? "full_attention" : "sliding_attention"));
      c.rope_parameters = { rope_theta: ropeTheta, rope_type: "default" };
      break;
    case "gemma3": {
      c.head_dim = count("attention.key_length", d.head_dim ?? 256);
      c.sliding_window = count("attention.sliding_window", d.sliding_window ?? 4096);
      const pattern = 6;
      c.layer_types = Array.from({ length: layers }, (_, i) => ((i + 1) % pattern === 0 ? "full_attention" : "sliding_attention"));
      // the file's rope base is the global layers'; the local ones keep Gemma 3's 10000
      c.rope_parameters = {
        full_attention: { rope_theta: ropeTheta, rope_type: "default" },
        sliding_attention: { rope_theta: 10000, rope_type: "default" },
      };
      break;
    }
    case "phi3":
      c.sliding_window = d.sliding_window ?? null;
      c.rope_parameters = { partial_rotary_factor: 1, rope_theta: ropeTheta, rope_type: "default" };
      break;
  }
  return sortKeys(c);
}

function sortKeys(o: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const k of Object.keys(o).sort()) {
    const v = o[k]!;
    out[k] = v !== null && typeof v === "object" && !Array.isArray(v) ? sortKeys(v as JsonObject) : v;
  }
  return out;
}
