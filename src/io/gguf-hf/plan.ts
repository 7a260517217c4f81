/**
 * GGUF -> a Hugging Face folder as transformers' `save_pretrained` writes it after loading the file
 * with `from_pretrained(DIR, gguf_file=...)`: config.json, the tokenizer files, and for each
 * safetensors tensor the GGUF tensor it comes from and what to do to its values.
 */
import { TensorcastError } from "../../errors.js";
import { architectureOf, type GgufHfArchitecture } from "./architectures.js";
import { hfConfig, type HfConfigOptions, type JsonObject } from "./config.js";
import { getCount, type GgufMetadata, type GgufTensorInfo } from "./metadata.js";
import { hfTensorName } from "./names.js";
import { hfTokenizerFiles, type TokenizerFiles } from "./tokenizer.js";
import { IDENTITY, rotaryHalf, type TensorTransform } from "./transforms.js";
import { pythonFloatText, toJsonText, type OrderedJson } from "./json.js";
import { generationConfigText } from "./generation.js";

export interface HfTensorPlan {
  /** transformers' state-dict name. */
  readonly hfName: string;
  /** The GGUF tensor its values come from. */
  readonly from: string;
  /** Row-major shape, the same in both. */
  readonly shape: readonly number[];
  readonly transform: TensorTransform;
}

export interface HfPlan {
  readonly architecture: GgufHfArchitecture;
  /** config.json as an object (sorted keys) and as the text to write. */
  readonly config: JsonObject;
  /**
   * File name -> text: config.json, generation_config.json, tokenizer.json, tokenizer_config.json,
   * chat_template.jinja if any.
   */
  readonly files: TokenizerFiles;
  /** In transformers' state-dict order (sorted by name, as save_pretrained writes safetensors). */
  readonly tensors: readonly HfTensorPlan[];
  /** GGUF tensors with no transformers counterpart, which transformers also drops. */
  readonly skipped: readonly string[];
}

/**
 * The plan for one GGUF file of architecture llama (Mistral files included), qwen2, qwen3, gemma2,
 * gemma3 or phi3; UNSUPPORTED_TYPE naming any other and the supported ones.
 *
 * The tied-embedding rule is llama.cpp's: no `output.weight` means lm_head is the embedding, so
 * tie_word_embeddings is true and no lm_head is written. Q/K rows are un-permuted for `llama`
 * (llama.cpp permutes only there) when the file states both head counts, as transformers does;
 * Gemma's norms get -1.
 */
export function ggufToHf(meta: GgufMetadata, tensors: readonly GgufTensorInfo[], options: HfConfigOptions = {}): HfPlan {
  const arch = architectureOf(meta);
  const config = hfConfig(arch, meta, tensors, options);
  const files: TokenizerFiles = {
    "config.json": toJsonText(configJson(config), true),
    "generation_config.json": generationConfigText(config),
    ...hfTokenizerFiles(arch, meta),
  };
  const layers = config.num_hidden_layers as number;
  const heads = getCount(meta, `${arch}.attention.head_count`);
  const kvHeads = getCount(meta, `${arch}.attention.head_count_kv`);
  const seen = new Map<string, string>();
  const planned: HfTensorPlan[] = [];
  const skipped: string[] = [];
  for (const t of tensors) {
    const hfName = hfTensorName(arch, t.name, layers);
    if (hfName === undefined) {
      skipped.push(t.name);
      continue;
    }
    const dup = seen.get(hfName);
    if (dup !== undefined) {
      throw new TensorcastError("INVALID_DATA", `GGUF tensors ${dup} and ${t.name} both map to ${hfName}`);
    }
    seen.set(hfName, t.name);
    planned.push({ hfName, from: t.name, shape: [...t.shape], transform: transformFor(arch, t, heads, kvHeads) });
  }
  planned.sort((a, b) => (a.hfName < b.hfName ? -1 : a.hfName > b.hfName ? 1 : 0));
  return { architecture: arch, config, files, tensors: planned, skipped };
}

function transformFor(arch: GgufHfArchitecture, t: GgufTensorInfo, heads: number | undefined, kvHeads: number | undefined): TensorTransform {
  if (arch === "llama" && heads !== undefined && kvHeads !== undefined) {
    const q = t.name.includes(".attn_q.");
    const k = t.name.includes(".attn_k.");
    if (q || k) {
      const n = q ? heads : kvHeads;
      rotaryHalf(t.shape[0] ?? 1, n, t.shape);
      return { kind: "unpermute-rotary", heads: n };
    }
  }
  if ((arch === "gemma2" || arch === "gemma3") && t.name.includes("norm.weight")) {
    return { kind: "offset", delta: -1 };
  }
  return IDENTITY;
}

/**
 * The config keys that transformers' config classes hold as Python floats, which json.dumps writes
 * as 0.0 and 500000.0 where a JavaScript number prints 0 and 500000.
 */
const FLOAT_KEYS: ReadonlySet<string> = new Set([
  "attention_dropout", "attn_logit_softcapping", "embd_pdrop", "final_logit_softcapping", "initializer_range",
  "partial_rotary_factor", "resid_pdrop", "rms_norm_eps", "rope_theta",
]);

function configJson(o: JsonObject): OrderedJson {
  const m = new Map<string, OrderedJson>();
  for (const [k, v] of Object.entries(o)) {
    if (typeof v === "number" && FLOAT_KEYS.has(k)) m.set(k, { rawNumber: pythonFloatText(v) });
    else m.set(k, v !== null && typeof v === "object" && !Array.isArray(v) ? configJson(v as JsonObject) : (v as OrderedJson));
  }
  return m;
}
