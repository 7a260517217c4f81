/**
 * The model's hyperparameter keys, in the order convert_hf_to_gguf.py's TextModel writes them,
 * then each architecture's own. `config` is config.json as saved (with a `text_config` merged
 * over it); convert_hf_to_gguf reads transformers' AutoConfig, which fills in class defaults, so
 * a config.json missing a key its class defaults converts without that key here.
 */
import { TensorcastError } from "../../errors.js";
import type { GgufMetadataEntry } from "../gguf/values.js";
import type { HfArchitecture } from "./architectures.js";
import { isObject, type Json } from "./json.js";

export type Hparams = { readonly [k: string]: Json };

/** The first of `keys` config has (its value may be null, as find_hparam returns it). */
export function findHparam(h: Hparams, keys: readonly string[]): Json | undefined {
  for (const k of keys) if (k in h) return h[k];
  return undefined;
}

/** config.json with text_config merged over it, as TextModel reads it. */
export function textHparams(config: Json): Hparams {
  if (!isObject(config)) throw new TensorcastError("INVALID_DATA", "config.json is not a JSON object");
  const t = config.text_config;
  return isObject(t) ? { ...config, ...t } : config;
}

/** TextModel's rope_parameters: rope_parameters or rope_scaling, with the top-level theta and friends mirrored in. */
export function ropeParameters(h: Hparams): { [k: string]: Json } {
  const raw = "rope_parameters" in h ? h.rope_parameters : h.rope_scaling;
  const rp: { [k: string]: Json } = isObject(raw) ? { ...raw } : {};
  const theta = findHparam(h, ["global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta", "rotary_emb_base"]);
  const local = findHparam(h, ["local_rope_theta", "rope_local_theta", "rope_theta_local", "swa_rope_theta", "rope_local_base_freq"]);
  const partial = findHparam(h, ["partial_rotary_factor", "rope_pct", "rope_percent"]);
  const orig = findHparam(h, ["original_max_position_embeddings"]);
  if (!("full_attention" in rp) && !("sliding_attention" in rp)) {
    if (local !== undefined && local !== null) rp.sliding_attention = { rope_theta: local };
    if (!("rope_theta" in rp) && theta !== undefined && theta !== null) rp.rope_theta = theta;
    if (!("rope_type" in rp) && rp.type !== undefined && rp.type !== null) rp.rope_type = rp.type;
    if (!("partial_rotary_factor" in rp) && partial !== undefined && partial !== null) rp.partial_rotary_factor = partial;
    if (!("original_max_position_embeddings" in rp) && orig !== undefined && orig !== null) rp.original_max_position_embeddings = orig;
  }
  return rp;
}

const num = (v: Json | undefined): v is number => typeof v === "number";

function count(v: Json | undefined, what: string): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw new TensorcastError("INVALID_DATA", `config.json: ${what} is ${JSON.stringify(v)}, not a count`);
  return v;
}

const present = (v: Json | undefined): boolean => v !== undefined && v !== null;

/** Writers of typed keys into `out`, checking the values. */
function writers(out: GgufMetadataEntry[]) {
  return {
    u32: (key: string, v: Json | undefined, what: string): void => {
      out.push({ key, type: "uint32", value: count(v, what) });
    },
    f32: (key: string, v: Json | undefined, what: string): void => {
      if (!num(v)) throw new TensorcastError("INVALID_DATA", `config.json: ${what} is ${JSON.stringify(v)}, not a number`);
      out.push({ key, type: "float32", value: v });
    },
  };
}

/**
 * The model's hyperparameter keys with general.file_type among them, in the order its
 * set_gguf_parameters writes them (a key written twice keeps its first place: plan.ts merges).
 */
export function hyperparameterEntries(h: Hparams, arch: HfArchitecture, fileType: number): GgufMetadataEntry[] {
  switch (arch.params) {
    case "text":
      return textEntries(h, arch, fileType);
    case "qwen2moe":
      return qwen2MoeEntries(h, arch, fileType);
    case "phi3":
      return phi3Entries(h, arch, fileType);
    case "gemma2":
      return gemma2Entries(h, arch, fileType);
    case "gemma3":
      return gemma3Entries(h, arch, fileType);
  }
}

/** Qwen2MoeModel.set_gguf_parameters: TextModel's, then the experts' feed-forward sizes. */
function qwen2MoeEntries(h: Hparams, arch: HfArchitecture, fileType: number): GgufMetadataEntry[] {
  const out = textEntries(h, arch, fileType);
  const { u32 } = writers(out);
  if (present(h.moe_intermediate_size)) u32(`${arch.gguf}.expert_feed_forward_length`, h.moe_intermediate_size, "moe_intermediate_size");
  if (present(h.shared_expert_intermediate_size)) u32(`${arch.gguf}.expert_shared_feed_forward_length`, h.shared_expert_intermediate_size, "shared_expert_intermediate_size");
  return out;
}

/** Phi3MiniModel.set_gguf_parameters (not TextModel's). */
function phi3Entries(h: Hparams, arch: HfArchitecture, fileType: number): GgufMetadataEntry[] {
  const a = arch.gguf;
  const out: GgufMetadataEntry[] = [];
  const { u32, f32 } = writers(out);
  const rp = ropeParameters(h);
  if (present(rp.long_factor) && !(Array.isArray(rp.long_factor) && rp.long_factor.length === 0)) {
    throw new TensorcastError("UNSUPPORTED_TYPE", "config.json: Phi-3 long-context rope factors (rope_factors_long/short tensors) are not converted");
  }
  const embd = count(findHparam(h, ["hidden_size", "n_embd"]), "hidden_size");
  const heads = count(findHparam(h, ["num_attention_heads", "n_head"]), "num_attention_heads");
  const pct = rp.partial_rotary_factor ?? 1.0;
  if (!num(pct)) throw new TensorcastError("INVALID_DATA", `config.json: partial_rotary_factor is ${JSON.stringify(pct)}`);
  u32(`${a}.context_length`, findHparam(h, ["n_positions", "max_position_embeddings"]), "max_position_embeddings");
  u32(`${a}.rope.scaling.original_context_length`, rp.original_max_position_embeddings, "original_max_position_embeddings");
  u32(`${a}.embedding_length`, embd, "hidden_size");
  u32(`${a}.feed_forward_length`, findHparam(h, ["intermediate_size"]), "intermediate_size");
  u32(`${a}.block_count`, findHparam(h, ["n_layers", "num_hidden_layers", "n_layer", "num_layers"]), "num_hidden_layers");
  u32(`${a}.attention.head_count`, heads, "num_attention_heads");
  u32(`${a}.attention.head_count_kv`, findHparam(h, ["num_key_value_heads", "n_head_kv"]), "num_key_value_heads");
  f32(`${a}.attention.layer_norm_rms_epsilon`, findHparam(h, ["rms_norm_eps"]), "rms_norm_eps");
  u32(`${a}.rope.dimension_count`, Math.floor(Math.trunc(pct * embd) / heads), "the rotary dimension");
  const full = isObject(rp.full_attention) ? rp.full_attention : rp;
  f32(`${a}.rope.freq_base`, full.rope_theta, "rope_theta");
  out.push({ key: "general.file_type", type: "uint32", value: fileType });
  u32(`${a}.attention.sliding_window`, present(h.sliding_window) ? h.sliding_window : 0, "sliding_window");
  return out;
}

/** Gemma2Model.set_gguf_parameters (not TextModel's). */
function gemma2Entries(h: Hparams, arch: HfArchitecture, fileType: number): GgufMetadataEntry[] {
  const a = arch.gguf;
  const out: GgufMetadataEntry[] = [];
  const { u32, f32 } = writers(out);
  u32(`${a}.context_length`, h.max_position_embeddings, "max_position_embeddings");
  u32(`${a}.embedding_length`, h.hidden_size, "hidden_size");
  u32(`${a}.block_count`, findHparam(h, ["n_layers", "num_hidden_layers", "n_layer", "num_layers"]), "num_hidden_layers");
  u32(`${a}.feed_forward_length`, h.intermediate_size, "intermediate_size");
  u32(`${a}.attention.head_count`, h.num_attention_heads, "num_attention_heads");
  u32(`${a}.attention.head_count_kv`, "num_key_value_heads" in h ? h.num_key_value_heads : h.num_attention_heads, "num_key_value_heads");
  f32(`${a}.attention.layer_norm_rms_epsilon`, h.rms_norm_eps, "rms_norm_eps");
  u32(`${a}.attention.key_length`, h.head_dim, "head_dim");
  u32(`${a}.attention.value_length`, h.head_dim, "head_dim");
  out.push({ key: "general.file_type", type: "uint32", value: fileType });
  f32(`${a}.attn_logit_softcapping`, h.attn_logit_softcapping, "attn_logit_softcapping");
  f32(`${a}.final_logit_softcapping`, h.final_logit_softcapping, "final_logit_softcapping");
  u32(`${a}.attention.sliding_window`, h.sliding_window, "sliding_window");
  return out;
}

/** Gemma3Model.set_gguf_parameters: TextModel's, then its own (some rewritten in place, with its defaults). */
function gemma3Entries(h: Hparams, arch: HfArchitecture, fileType: number): GgufMetadataEntry[] {
  const a = arch.gguf;
  const out = textEntries(h, arch, fileType);
  const { u32, f32 } = writers(out);
  const or = (v: Json | undefined, d: number): Json => (v === undefined ? d : v);
  u32(`${a}.context_length`, or(h.max_position_embeddings, 131072), "max_position_embeddings");
  u32(`${a}.attention.head_count`, or(h.num_attention_heads, 8), "num_attention_heads");
  f32(`${a}.attention.layer_norm_rms_epsilon`, or(h.rms_norm_eps, 1e-6), "rms_norm_eps");
  u32(`${a}.attention.key_length`, or(h.head_dim, 256), "head_dim");
  u32(`${a}.attention.value_length`, or(h.head_dim, 256), "head_dim");
  const rp = ropeParameters(h);
  const full = isObject(rp.full_attention) ? rp.full_attention : rp;
  f32(`${a}.rope.freq_base`, or(full.rope_theta, 1_000_000), "rope_theta");
  if (present(h.attn_logit_softcapping)) throw new TensorcastError("INVALID_DATA", "config.json: Gemma 3 has no attn_logit_softcapping");
  const cap = h.final_logit_softcapping;
  if (present(cap) && cap !== 0 && cap !== false) f32(`${a}.final_logit_softcapping`, cap, "final_logit_softcapping");
  if (h.sliding_window_pattern !== 1) u32(`${a}.attention.sliding_window`, h.sliding_window, "sliding_window");
  u32(`${a}.attention.head_count_kv`, or(h.num_key_value_heads, 4), "num_key_value_heads");
  return out;
}

/** TextModel.set_gguf_parameters, then LlamaModel's additions for llama. */
function textEntries(h: Hparams, arch: HfArchitecture, fileType: number): GgufMetadataEntry[] {
  const a = arch.gguf;
  const out: GgufMetadataEntry[] = [];
  const { u32, f32 } = writers(out);

  const blocks = findHparam(h, ["n_layers", "num_hidden_layers", "n_layer", "num_layers"]);
  u32(`${a}.block_count`, blocks, "num_hidden_layers");
  const ctx = findHparam(h, ["max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length", "model_max_length"]);
  if (present(ctx)) u32(`${a}.context_length`, ctx, "max_position_embeddings");
  const embd = findHparam(h, ["hidden_size", "n_embd", "dim"]);
  if (present(embd)) u32(`${a}.embedding_length`, embd, "hidden_size");
  const ff = findHparam(h, ["prefix_dense_intermediate_size", "dense_intermediate_size", "intermediate_size", "n_inner", "hidden_dim"]);
  if (present(ff)) u32(`${a}.feed_forward_length`, ff, "intermediate_size");
  const heads = findHparam(h, ["num_attention_heads", "n_head", "n_heads"]);
  if (present(heads)) u32(`${a}.attention.head_count`, heads, "num_attention_heads");
  const kv = findHparam(h, ["num_key_value_heads", "n_kv_heads"]);
  if (present(kv)) u32(`${a}.attention.head_count_kv`, kv, "num_key_value_heads");
  if (h.is_causal === false) out.push({ key: `${a}.attention.causal`, type: "bool", value: false });

  const rpAll = ropeParameters(h);
  const rp = isObject(rpAll.full_attention) ? rpAll.full_attention : rpAll;
  const ropeType = rp.rope_type;
  if (present(ropeType)) {
    const factor = rp.factor;
    if (ropeType === "linear" && present(factor)) {
      out.push({ key: `${a}.rope.scaling.type`, type: "string", value: "linear" });
      f32(`${a}.rope.scaling.factor`, factor, "rope factor");
    } else if (ropeType === "yarn" && present(factor)) {
      out.push({ key: `${a}.rope.scaling.type`, type: "string", value: "yarn" });
      f32(`${a}.rope.scaling.factor`, factor, "rope factor");
      u32(`${a}.rope.scaling.original_context_length`, rp.original_max_position_embeddings, "original_max_position_embeddings");
      if (present(rp.extrapolation_factor)) f32(`${a}.rope.scaling.yarn_ext_factor`, rp.extrapolation_factor, "extrapolation_factor");
      const attn = "attention_factor" in rp ? rp.attention_factor : rp.attn_factor;
      if (present(attn)) f32(`${a}.rope.scaling.yarn_attn_factor`, attn, "attention_factor");
      if (present(rp.beta_fast)) f32(`${a}.rope.scaling.yarn_beta_fast`, rp.beta_fast, "beta_fast");
      if (present(rp.beta_slow)) f32(`${a}.rope.scaling.yarn_beta_slow`, rp.beta_slow, "beta_slow");
    } else if (ropeType === "su" || ropeType === "longrope") {
      out.push({ key: `${a}.rope.scaling.type`, type: "string", value: "longrope" });
    }
    // "llama3" writes no key: LlamaModel adds a rope_freqs tensor instead (plan.ts), other models nothing
  }
  if ("mrope_section" in rpAll) throw new TensorcastError("UNSUPPORTED_TYPE", "config.json: multimodal rope (mrope_section) is not converted");
  if (present(rp.rope_theta)) f32(`${a}.rope.freq_base`, rp.rope_theta, "rope_theta");
  const swa = isObject(rpAll.sliding_attention) ? rpAll.sliding_attention.rope_theta : undefined;
  if (present(swa)) f32(`${a}.rope.freq_base_swa`, swa, "sliding-window rope_theta");
  const rms = findHparam(h, ["rms_norm_eps", "norm_eps"]);
  if (present(rms)) f32(`${a}.attention.layer_norm_rms_epsilon`, rms, "rms_norm_eps");
  const ln = findHparam(h, ["layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"]);
  if (present(ln)) f32(`${a}.attention.layer_norm_epsilon`, ln, "layer_norm_eps");
  const experts = findHparam(h, ["num_local_experts", "num_experts", "n_routed_experts"]);
  if (present(experts) && arch.experts === undefined) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `config.json: a mixture-of-experts ${arch.gguf} is not converted; mixture-of-experts classes converted: MixtralForCausalLM, Qwen3MoeForCausalLM`);
  }
  if (present(experts)) u32(`${a}.expert_count`, experts, "num_local_experts");
  const used = findHparam(h, ["num_experts_per_tok", "num_experts_per_token", "top_k_experts"]);
  if (present(used)) u32(`${a}.expert_used_count`, used, "num_experts_per_tok");
  if (present(h.n_group)) u32(`${a}.expert_group_count`, h.n_group, "n_group");
  if (present(h.topk_group)) u32(`${a}.expert_group_used_count`, h.topk_group, "topk_group");
  const score = findHparam(h, ["score_function", "scoring_func", "score_func", "moe_router_activation", "moe_router_activation_func", "expert_selection_fn"]);
  if (present(score)) {
    // ExpertGatingFuncType
    const gating: Record<string, number> = { softmax: 1, sigmoid: 2, sqrtsoftplus: 4 };
    const v = typeof score === "string" && Object.prototype.hasOwnProperty.call(gating, score) ? gating[score] : undefined;
    if (v === undefined) throw new TensorcastError("INVALID_DATA", `config.json: expert scoring function ${JSON.stringify(score)}; known: ${Object.keys(gating).join(", ")}`);
    out.push({ key: `${a}.expert_gating_func`, type: "uint32", value: v });
  }
  if (present(h.head_dim)) {
    u32(`${a}.attention.key_length`, h.head_dim, "head_dim");
    u32(`${a}.attention.value_length`, h.head_dim, "head_dim");
  }
  out.push({ key: "general.file_type", type: "uint32", value: fileType });

  if (arch.gguf === "llama") {
    u32(`${a}.vocab_size`, h.vocab_size, "vocab_size");
    const rope = present(h.head_dim) ? h.head_dim : Math.floor(count(h.hidden_size, "hidden_size") / count(h.num_attention_heads, "num_attention_heads"));
    u32(`${a}.rope.dimension_count`, rope, "the rotary dimension");
  }
  return out;
}
