/**
 * What llama_model_quantize (llama.cpp src/llama-quant.cpp) does to a GGUF model, tensor by
 * tensor, decided before any data is read: the order it writes the tensors in, the GGML type each
 * one gets (llama_tensor_get_type: the preset's mix, the options, the fallback for rows that are
 * not whole blocks), which tensors it refuses to make (an importance matrix missing, requantizing
 * without leave), and the metadata of the output (the input's pairs in order, split.* dropped,
 * general.quantization_version and general.file_type set last).
 *
 * Browser-safe: no Node built-ins. The file job that follows the plan is src/node/quantize/gguf.ts.
 */
import { TensorcastError } from "../../errors.js";
import { canQuantize } from "../../ggml/quantize/index.js";
import { canDequantize } from "../../ggml/dequantize.js";
import { FTYPE, llamaPreset, type LlamaPreset } from "../../ggml/presets.js";
import { ggmlType, type GgmlType } from "../../ggml/types.js";
import type { GgufMetadataEntry } from "./values.js";
import { utf8Bytes } from "../onnx/precision/pb.js";

/** GGML_QNT_VERSION: general.quantization_version of every quantized file. */
export const GGML_QNT_VERSION = 2;

/** A tensor of the input model, as its tensor info gives it. */
export interface PlanInputTensor {
  readonly name: string;
  readonly ggmlType: GgmlType;
  /** GGML's order, fastest first (as the tensor info lists them). */
  readonly dims: readonly number[];
  /** The part of a split model holding it (0 when absent), and its offset there: keepSplit's order. */
  readonly split?: number;
  readonly offset?: number;
}

/** A --tensor-type NAME=TYPE override: a regular expression searched in each tensor's name. */
export interface TensorTypeOverride {
  readonly pattern: string;
  readonly type: GgmlType | string;
}

export interface GgufQuantizeOptions {
  /** A llama-quantize preset (any case) or its row. */
  readonly preset: LlamaPreset | string;
  /** --allow-requantize: quantize tensors that are quantized already (dequantized first). */
  readonly allowRequantize?: boolean;
  /** --leave-output-tensor: output.weight keeps its type. */
  readonly leaveOutputTensor?: boolean;
  /** --output-tensor-type: output.weight's type (and the token embedding's when they are tied). */
  readonly outputTensorType?: GgmlType | string;
  /** --token-embedding-type. */
  readonly tokenEmbeddingType?: GgmlType | string;
  /** --pure: every quantized tensor in the preset's type (no mix; fallbacks still apply). */
  readonly pure?: boolean;
  /** --tensor-type overrides, the first whose pattern matches a name winning. */
  readonly tensorTypes?: readonly TensorTypeOverride[];
  /** Whether an importance matrix is given (it changes the mix of IQ3_XXS, IQ4_NL, IQ4_XS, Q4_0, Q5_0). */
  readonly imatrix?: boolean;
  /**
   * --keep-split: the tensors visited and written in the input's order (by part, then by offset)
   * as llama_model_quantize re-sorts them for keep_split, rather than by weights_map's; the
   * per-layer mixes count tensors in that order.
   */
  readonly keepSplit?: boolean;
}

/** The hyperparameters llama_tensor_get_type looks at, as llama.cpp's loader reads them. */
export interface QuantizeModelFacts {
  readonly architecture: string;
  /** {arch}.block_count. */
  readonly layers: number;
  /** Layer 0's {arch}.attention.head_count and head_count_kv (default: head_count). */
  readonly heads: number;
  readonly headsKv: number;
  /** {arch}.expert_count (0 without). */
  readonly experts: number;
  /** llama.cpp's LLM_TYPE_70B (8 heads sharing attn_v): more bits for attn_v. */
  readonly is70B: boolean;
}

export interface PlannedTensor {
  readonly name: string;
  readonly from: GgmlType;
  readonly to: GgmlType;
  /** ggml_n_dims' dimensions (trailing 1s dropped), as the output's tensor info lists them. */
  readonly dims: readonly number[];
  /** Whether its data changes (to differs from from): dequantized or converted to float32, then quantized. */
  readonly quantize: boolean;
  /** The type the rules chose when its rows are not whole blocks of it (to is then the fallback). */
  readonly fallbackFrom?: GgmlType;
  /** Whether the preset's rules apply to it (tensor_allows_quantization); else it keeps its type. */
  readonly allowed: boolean;
  /** Whether llama.cpp makes its type only with an importance matrix (tensor_requires_imatrix). */
  readonly requiresImatrix: boolean;
}

export interface GgufQuantizePlan {
  readonly preset: LlamaPreset;
  /** general.file_type of the output. */
  readonly fileType: number;
  readonly facts: QuantizeModelFacts;
  /** In the order llama_model_quantize writes them. */
  readonly tensors: readonly PlannedTensor[];
  /** The output's metadata, in order. */
  readonly metadata: readonly GgufMetadataEntry[];
  /** Tensors whose rows made the rules fall back to another type. */
  readonly fallbacks: number;
}

function bad(message: string, code: "INVALID_ATTRIBUTE" | "UNSUPPORTED_TYPE" | "SHAPE_MISMATCH" | "INVALID_DATA" = "INVALID_ATTRIBUTE"): TensorcastError {
  return new TensorcastError(code, message);
}

function typeOption(t: GgmlType | string | undefined, what: string): GgmlType | undefined {
  if (t === undefined) return undefined;
  const type = typeof t === "string" ? ggmlType(t) : t;
  if (!canQuantize(type, true)) throw bad(`${what} ${type.name}: tensorcast does not write that type`, "UNSUPPORTED_TYPE");
  return type;
}

function intKey(metadata: ReadonlyMap<string, GgufMetadataEntry>, key: string): number | undefined {
  const e = metadata.get(key);
  if (e === undefined) return undefined;
  let v: unknown = e.value;
  // Per-layer arrays (head_count of some models): layer 0's, as hparams.n_head() reads it.
  if (e.type === "array") v = (e.value as { items: ArrayLike<unknown> }).items[0];
  const n = typeof v === "bigint" ? Number(v) : v;
  if (typeof n !== "number" || !Number.isInteger(n) || n < 0) throw bad(`${key} is ${String(v)}, not a count`, "INVALID_DATA");
  return n;
}

/**
 * The hyperparameters of a GGUF model that its quantization looks at: general.architecture,
 * {arch}.block_count, head counts, expert_count.
 * @throws TensorcastError INVALID_DATA without general.architecture or {arch}.block_count (as llama.cpp's loader refuses the model).
 */
export function quantizeModelFacts(metadata: ReadonlyMap<string, GgufMetadataEntry>): QuantizeModelFacts {
  const archEntry = metadata.get("general.architecture");
  if (archEntry === undefined || archEntry.type !== "string") throw bad("the model has no general.architecture string, which llama.cpp needs to read it", "INVALID_DATA");
  const arch = archEntry.value as string;
  const layers = intKey(metadata, `${arch}.block_count`);
  if (layers === undefined || layers < 1 || layers > 512) throw bad(`the model's ${arch}.block_count is ${layers ?? "missing"}; llama.cpp needs 1 to 512`, "INVALID_DATA");
  const heads = intKey(metadata, `${arch}.attention.head_count`) ?? 0;
  const headsKv = intKey(metadata, `${arch}.attention.head_count_kv`) ?? heads;
  let experts = intKey(metadata, `${arch}.expert_count`) ?? 0;
  if ((arch === "hunyuan-dense" || arch === "hunyuan_vl") && experts <= 1) experts = 0;
  // llama.cpp's load_arch_hparams: the architectures whose 80 (jais2: 68) layers are a "70B".
  const is70B =
    (arch === "llama" && layers === 80 && experts !== 8 && heads !== headsKv) ||
    ((arch === "qwen2" || arch === "deci" || arch === "olmo") && layers === 80) ||
    (arch === "jais2" && layers === 68);
  return { architecture: arch, layers, heads, headsKv, experts, is70B };
}

type Category = "TOKEN_EMBD" | "ATTENTION_Q" | "ATTENTION_V" | "ATTENTION_K" | "ATTENTION_QKV" | "ATTENTION_KV_B" | "ATTENTION_OUTPUT" | "FFN_UP" | "FFN_GATE" | "FFN_DOWN" | "OUTPUT" | "OTHER";

function isTokenEmbedding(name: string): boolean {
  return name === "token_embd.weight" || name === "per_layer_token_embd.weight";
}

/** tensor_get_category: the first substring that matches, in llama.cpp's order. */
function categoryOf(name: string): Category {
  if (name === "output.weight") return "OUTPUT";
  if (isTokenEmbedding(name)) return "TOKEN_EMBD";
  const rules: readonly [string, Category][] = [
    ["attn_qkv.weight", "ATTENTION_QKV"], ["attn_kv_b.weight", "ATTENTION_KV_B"], ["attn_v.weight", "ATTENTION_V"],
    ["attn_k.weight", "ATTENTION_K"], ["attn_q.weight", "ATTENTION_Q"], ["attn_output.weight", "ATTENTION_OUTPUT"],
    ["ffn_up", "FFN_UP"], ["ffn_gate", "FFN_GATE"], ["ffn_down", "FFN_DOWN"],
  ];
  for (const [part, c] of rules) if (name.includes(part)) return c;
  return "OTHER";
}

const isAttnV = (c: Category): boolean => c === "ATTENTION_V" || c === "ATTENTION_QKV" || c === "ATTENTION_KV_B";

/** Substrings that keep a tensor as it is (tensor_allows_quantization), besides the name rules in allowsQuantization. */
const NEVER_QUANTIZED = [
  "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
  "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
  ...["first", "w0", "w1", "w2", "v0", "v1", "v2", "a0", "a1", "a2", "g1", "g2", "decay_w1", "decay_w2", "lerp_fused"].map((s) => `time_mix_${s}.weight`),
  "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger",
  "a.rvq.codebook", "mm.a.code_embd",
];

function allowsQuantization(name: string, dims: readonly number[], leaveOutput: boolean): boolean {
  if (dims.length < 2) return false;
  // name.rfind("weight") == name.size() - 6 in size_t: a name of exactly 5 bytes compares npos
  // with 5 - 6 wrapped around, which is npos too, so llama.cpp takes it for a weight.
  if (!name.endsWith("weight") && utf8Bytes(name).length !== 5) return false;
  if (leaveOutput && name === "output.weight") return false;
  if (name === "position_embd.weight" || name === "token_types.weight") return false;
  return !NEVER_QUANTIZED.some((s) => name.includes(s));
}

/**
 * sscanf(name, "blk.%d.", &layer)'s layer: "blk." then %d (spaces, a sign, digits, as strtol
 * reads them and stores them in an int), or undefined when %d matches nothing.
 */
export function layerOf(name: string): number | undefined {
  if (!name.startsWith("blk.")) return undefined;
  const m = /^[ \t\n\v\f\r]*([+-]?)(\d+)/.exec(name.slice(4));
  if (!m) return undefined;
  let v = BigInt(m[2]);
  if (m[1] === "-") v = -v;
  // strtol saturates at the long's range; scanf then keeps the low 32 bits.
  const LONG_MAX = (1n << 63n) - 1n;
  if (v > LONG_MAX) v = LONG_MAX;
  if (v < -LONG_MAX - 1n) v = -LONG_MAX - 1n;
  return Number(BigInt.asIntN(32, v));
}

/** std::string's operator<: bytes compared unsigned. */
function byteLess(a: string, b: string): number {
  const x = utf8Bytes(a);
  const y = utf8Bytes(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** llama_model_loader's weights_map order: by layer (tensors outside blocks first), then by name's bytes. */
export function weightOrder<T extends { readonly name: string }>(tensors: readonly T[]): T[] {
  const keyed = tensors.map((t) => ({ t, layer: layerOf(t.name) ?? -1 }));
  keyed.sort((a, b) => (a.layer !== b.layer ? a.layer - b.layer : byteLess(a.t.name, b.t.name)));
  return keyed.map((k) => k.t);
}

/** keep_split's order: by the part holding the tensor, then by its offset there (stable otherwise). */
function fileOrder<T extends PlanInputTensor>(tensors: readonly T[]): T[] {
  return tensors.map((t, i) => ({ t, i })).sort((a, b) => (a.t.split ?? 0) - (b.t.split ?? 0) || (a.t.offset ?? 0) - (b.t.offset ?? 0) || a.i - b.i).map((k) => k.t);
}

/** ggml_n_dims: the dimensions without trailing 1s (at least one). */
function nDims(dims: readonly number[]): number[] {
  const d = dims.length === 0 ? [1] : dims.slice();
  while (d.length > 1 && d[d.length - 1] === 1) d.pop();
  return d;
}

const T = (name: string): GgmlType => ggmlType(name);

/** The state llama_tensor_get_type_impl carries from one tensor to the next (quantize_state_impl). */
interface State {
  readonly facts: QuantizeModelFacts;
  readonly ftype: number;
  readonly imatrix: boolean;
  readonly tiedEmbeddings: boolean;
  readonly outputTensorType: GgmlType | undefined;
  nAttentionWv: number;
  iAttentionWv: number;
  iFfnDown: number;
  iFfnGate: number;
  iFfnUp: number;
}

function useMoreBits(i: number, n: number): boolean {
  // C's int division truncates; (i - n/8) % 3 keeps the sign of the dividend as JS's % does.
  const d8 = Math.trunc(n / 8);
  return i < d8 || i >= Math.trunc((7 * n) / 8) || (i - d8) % 3 === 2;
}

/** layer_info: the counter, or for models with experts the layer its name gives. */
function layerInfo(s: State, counter: number, name: string): [number, number] {
  const n = s.facts.layers;
  if (Math.max(1, s.facts.experts) > 1) {
    const layer = layerOf(name);
    if (layer === undefined) throw bad(`failed to determine layer for tensor ${name}`, "INVALID_DATA");
    if (layer < 0 || layer >= n) throw bad(`bad layer ${layer} for tensor ${name}: must be in [0, ${n})`, "INVALID_DATA");
    return [layer, n];
  }
  return [counter, n];
}

/** llama_tensor_get_type_impl: the preset's mix. */
function mixType(s: State, type: GgmlType, name: string, dims: readonly number[], c: Category): GgmlType {
  const f = s.ftype;
  const { facts } = s;
  const gqa = facts.headsKv === 0 ? 0 : Math.trunc(facts.heads / facts.headsKv);
  const iq12 = f === FTYPE.IQ2_XXS || f === FTYPE.IQ2_XS || f === FTYPE.IQ1_S || f === FTYPE.IQ2_S || f === FTYPE.IQ2_M || f === FTYPE.IQ1_M;
  const falcon = facts.architecture === "falcon";
  let t = type;
  if (c === "OUTPUT" || (s.tiedEmbeddings && c === "TOKEN_EMBD")) {
    if (s.outputTensorType !== undefined) return s.outputTensorType;
    const nx = dims[0];
    if (f === FTYPE.MXFP4_MOE) t = T("Q8_0");
    else if (falcon || nx % t.blockSize !== 0) t = T("Q8_0");
    else if (iq12 || f === FTYPE.IQ3_XXS) t = T("Q5_K");
    else if (t.name !== "Q8_0") t = T("Q6_K");
    return t;
  }
  if (f === FTYPE.MXFP4_MOE) {
    const expertRole = c === "FFN_UP" || c === "FFN_GATE" || c === "FFN_DOWN";
    return (dims[2] ?? 1) > 1 && (facts.architecture !== "bailingmoe3" || expertRole) ? T("MXFP4") : T("Q8_0");
  }
  if (c === "TOKEN_EMBD") {
    // An explicit --token-embedding-type returned before the mix was asked.
    if (f === FTYPE.IQ2_XXS || f === FTYPE.IQ2_XS || f === FTYPE.IQ1_S || f === FTYPE.IQ1_M) t = T("Q2_K");
    else if (f === FTYPE.IQ2_S || f === FTYPE.IQ2_M) t = T("IQ3_S");
    else if (f === FTYPE.IQ3_XXS) t = T("IQ3_S");
    else if (f === FTYPE.TQ1_0 || f === FTYPE.TQ2_0 || f === FTYPE.Q2_0) t = T("Q4_K");
    return t;
  }
  if (iq12) {
    const s2m = f === FTYPE.IQ2_S || f === FTYPE.IQ2_M;
    if (isAttnV(c)) {
      if (gqa >= 4 || facts.experts >= 4) t = T("Q4_K");
      else t = s2m ? T("IQ3_S") : T("Q2_K");
      s.iAttentionWv++;
    } else if (facts.experts === 8 && c === "ATTENTION_K") {
      t = T("Q4_K");
    } else if (c === "FFN_DOWN") {
      if (s.iFfnDown < Math.trunc(facts.layers / 8)) t = s2m ? T("IQ3_S") : T("Q2_K");
      s.iFfnDown++;
    } else if (c === "ATTENTION_OUTPUT") {
      if (facts.experts === 8) t = T("Q5_K");
      else if (f === FTYPE.IQ1_S || f === FTYPE.IQ1_M) t = T("IQ2_XXS");
      else if (s2m) t = T("IQ3_S");
    }
    return t;
  }
  if (isAttnV(c)) {
    const i = s.iAttentionWv;
    if (f === FTYPE.Q2_K) t = gqa >= 4 ? T("Q4_K") : T("Q3_K");
    else if (f === FTYPE.Q2_K_S && gqa >= 4) t = T("Q4_K");
    else if (f === FTYPE.IQ3_XXS) t = gqa >= 4 ? T("Q4_K") : !s.imatrix ? T("IQ3_S") : T("IQ3_XXS");
    else if ((f === FTYPE.IQ3_XS || f === FTYPE.IQ3_S) && gqa >= 4) t = T("Q4_K");
    else if (f === FTYPE.IQ3_M) t = T("Q4_K");
    else if (f === FTYPE.Q3_K_M) t = i < 2 ? T("Q5_K") : T("Q4_K");
    else if (f === FTYPE.Q3_K_L) t = T("Q5_K");
    else if ((f === FTYPE.IQ4_NL || f === FTYPE.IQ4_XS) && gqa >= 4) t = T("Q5_K");
    else if ((f === FTYPE.Q4_K_M || f === FTYPE.Q5_K_M) && useMoreBits(i, s.nAttentionWv)) t = T("Q6_K");
    else if (f === FTYPE.Q4_K_S && i < 4) t = T("Q5_K");
    if (facts.is70B && (t.name === "Q3_K" || t.name === "Q4_K")) t = T("Q5_K");
    if (facts.experts === 8) t = T("Q8_0");
    s.iAttentionWv++;
    return t;
  }
  if (c === "ATTENTION_K") {
    if (facts.experts === 8) t = T("Q8_0");
    else if (f === FTYPE.IQ3_XS) t = T("IQ3_XXS");
    else if (f === FTYPE.IQ3_XXS) t = T("IQ2_S");
    return t;
  }
  if (c === "ATTENTION_Q") {
    if (f === FTYPE.IQ3_XS) t = T("IQ3_XXS");
    else if (f === FTYPE.IQ3_XXS) t = T("IQ2_S");
    return t;
  }
  if (c === "FFN_DOWN") {
    const [i, n] = layerInfo(s, s.iFfnDown, name);
    const n8 = Math.trunc(n / 8);
    const n16 = Math.trunc(n / 16);
    if (f === FTYPE.Q2_K) t = T("Q3_K");
    else if (f === FTYPE.Q2_K_S) {
      if (i < n8) t = T("Q4_K");
    } else if (f === FTYPE.IQ3_XXS && !s.imatrix) t = i < n8 ? T("Q4_K") : T("Q3_K");
    else if (f === FTYPE.Q3_K_M) t = i < n16 ? T("Q5_K") : !falcon || useMoreBits(i, n) ? T("Q4_K") : T("Q3_K");
    else if (f === FTYPE.IQ3_M && (i < n8 || (facts.experts === 8 && useMoreBits(i, n)))) t = T("Q4_K");
    else if (f === FTYPE.Q3_K_L) t = falcon ? T("Q4_K") : T("Q5_K");
    else if (f === FTYPE.Q4_K_M) {
      if (falcon) t = i < n16 ? T("Q6_K") : useMoreBits(i, n) ? T("Q5_K") : T("Q4_K");
      else if (useMoreBits(i, n)) t = T("Q6_K");
    } else if (i < n8 && (f === FTYPE.IQ4_NL || f === FTYPE.IQ4_XS) && !s.imatrix) t = T("Q5_K");
    else if (f === FTYPE.Q5_K_M && useMoreBits(i, n)) t = T("Q6_K");
    else if (f === FTYPE.Q4_K_S && !falcon && i < n8) t = T("Q5_K");
    else if ((f === FTYPE.Q4_0 || f === FTYPE.Q5_0) && s.imatrix && i < n8) t = f === FTYPE.Q4_0 ? T("Q4_1") : T("Q5_1");
    s.iFfnDown++;
    return t;
  }
  if (c === "ATTENTION_OUTPUT") {
    if (!falcon) {
      if (facts.experts === 8) {
        const fives: readonly number[] = [FTYPE.Q2_K, FTYPE.IQ3_XS, FTYPE.IQ3_XXS, FTYPE.Q3_K_S, FTYPE.Q3_K_M, FTYPE.IQ4_NL, FTYPE.Q4_K_S, FTYPE.Q4_K_M, FTYPE.IQ3_S, FTYPE.IQ3_M, FTYPE.IQ4_XS];
        if (fives.includes(f)) t = T("Q5_K");
      } else if (f === FTYPE.Q2_K) t = T("Q3_K");
      else if (f === FTYPE.IQ3_XXS) t = T("IQ3_S");
      else if (f === FTYPE.Q3_K_M) t = T("Q4_K");
      else if (f === FTYPE.Q3_K_L) t = T("Q5_K");
      else if (f === FTYPE.IQ3_M) t = T("Q4_K");
    } else if (f === FTYPE.Q3_K_L) t = T("Q4_K");
    return t;
  }
  if (c === "ATTENTION_QKV") {
    if (f === FTYPE.Q3_K_M || f === FTYPE.Q3_K_L || f === FTYPE.IQ3_M) t = T("Q4_K");
    else if (f === FTYPE.Q4_K_M) t = T("Q5_K");
    else if (f === FTYPE.Q5_K_M) t = T("Q6_K");
    return t;
  }
  if (c === "FFN_GATE" || c === "FFN_UP") {
    const [i, n] = layerInfo(s, c === "FFN_GATE" ? s.iFfnGate : s.iFfnUp, name);
    if (f === FTYPE.IQ3_XS && i >= Math.trunc(n / 8) && i < Math.trunc((7 * n) / 8)) t = T("IQ3_XXS");
    if (c === "FFN_GATE") s.iFfnGate++;
    else s.iFfnUp++;
    return t;
  }
  return t;
}

/**
 * tensor_type_fallback: `t` when its block divides `ncols`, else the type llama.cpp demotes it to
 * (IQ types to IQ4_NL, Q2_K/Q3_K/TQ1_0/TQ2_0 to Q4_0, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0),
 * and F16 when rows are not a multiple of that type's block either.
 * @example fallbackType(ggmlType("Q4_K"), 96).name // "Q5_0"
 */
export function fallbackType(t: GgmlType, ncols: number): GgmlType {
  return fallback(t, ncols);
}

function fallback(t: GgmlType, ncols: number): GgmlType {
  if (ncols % t.blockSize === 0) return t;
  let r: GgmlType;
  switch (t.name) {
    case "IQ1_S": case "IQ1_M": case "IQ2_XXS": case "IQ2_XS": case "IQ2_S": case "IQ3_XXS": case "IQ3_S": case "IQ4_XS":
      r = T("IQ4_NL");
      break;
    case "Q2_0": case "Q2_K": case "Q3_K": case "TQ1_0": case "TQ2_0":
      r = T("Q4_0");
      break;
    case "Q4_K": r = T("Q5_0"); break;
    case "Q5_K": r = T("Q5_1"); break;
    case "Q6_K": r = T("Q8_0"); break;
    default:
      if (t.blockSize > 32) throw bad(`no tensor type fallback is defined for type ${t.name}`, "UNSUPPORTED_TYPE");
      r = t;
  }
  // Rows not a multiple of 32 either: F16, whatever the preset.
  return ncols % r.blockSize === 0 ? r : T("F16");
}

/** tensor_requires_imatrix. */
/** The types llama.cpp's tensor_requires_imatrix names: never made without an importance matrix. */
export const IMATRIX_TYPES: readonly string[] = ["IQ3_XXS", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_M", "IQ1_S"];

export function requiresImatrix(name: string, t: GgmlType, ftype: number): boolean {
  if (isTokenEmbedding(name) || name === "output.weight") return false;
  if (IMATRIX_TYPES.includes(t.name)) return true;
  return t.name === "Q2_K" && ftype === FTYPE.Q2_K_S;
}

function compileOverrides(list: readonly TensorTypeOverride[]): { re: RegExp; type: GgmlType }[] {
  return list.map((o) => {
    let re: RegExp;
    try {
      re = new RegExp(o.pattern);
    } catch (e) {
      throw bad(`--tensor-type ${JSON.stringify(o.pattern)}: not a regular expression (${(e as Error).message})`);
    }
    return { re, type: typeOption(o.type, `--tensor-type ${o.pattern}=`) as GgmlType };
  });
}

/**
 * The output's metadata: the input's pairs in order (gguf_set_kv), general.quantization_version
 * and general.file_type removed and appended in that order, split.no, split.count and
 * split.tensors.count removed, then `extra` set the same way (removed, appended).
 */
export function quantizedMetadata(input: Iterable<GgufMetadataEntry>, fileType: number, extra: readonly GgufMetadataEntry[] = []): GgufMetadataEntry[] {
  let out = [...input];
  const set = (e: GgufMetadataEntry): void => {
    out = out.filter((x) => x.key !== e.key);
    out.push(e);
  };
  set({ key: "general.quantization_version", type: "uint32", value: GGML_QNT_VERSION });
  set({ key: "general.file_type", type: "uint32", value: fileType });
  out = out.filter((x) => x.key !== "split.no" && x.key !== "split.count" && x.key !== "split.tensors.count");
  for (const e of extra) set(e);
  return out;
}

/**
 * What llama_model_quantize makes of a model with these metadata and tensors: every tensor's new
 * type, in the order it writes them, and the output's metadata.
 * @example planGgufQuantization(file.metadata, file.tensors, { preset: "Q4_K_M" }).tensors[0].to.name
 * @throws TensorcastError UNKNOWN_DTYPE for an unknown preset or type; UNSUPPORTED_TYPE for a
 *         type tensorcast does not write, a tensor that needs an importance matrix when none is
 *         given (llama.cpp's "this quantization requires an imatrix"), one that is quantized
 *         already without allowRequantize ("requantizing from type ... is disabled"), or one whose
 *         type cannot be read as float32 ("cannot dequantize/convert"); SHAPE_MISMATCH for a type
 *         given by --output-tensor-type or --token-embedding-type whose block does not divide
 *         the rows (llama.cpp asserts there); INVALID_DATA for a model llama.cpp would not read.
 */
export function planGgufQuantization(metadata: ReadonlyMap<string, GgufMetadataEntry>, tensors: readonly PlanInputTensor[], opts: GgufQuantizeOptions): GgufQuantizePlan {
  const preset = typeof opts.preset === "string" ? llamaPreset(opts.preset) : opts.preset;
  const facts = quantizeModelFacts(metadata);
  const outputTensorType = typeOption(opts.outputTensorType, "--output-tensor-type");
  const tokenEmbeddingType = typeOption(opts.tokenEmbeddingType, "--token-embedding-type");
  const overrides = compileOverrides(opts.tensorTypes ?? []);
  const ftype = preset.ftype;
  const defaultType = preset.defaultType;
  const ordered = opts.keepSplit ? fileOrder(tensors) : weightOrder(tensors);
  const state: State = {
    facts, ftype, imatrix: opts.imatrix === true, outputTensorType,
    tiedEmbeddings: !ordered.some((t) => categoryOf(t.name) === "OUTPUT"),
    nAttentionWv: ordered.filter((t) => isAttnV(categoryOf(t.name))).length,
    iAttentionWv: 0, iFfnDown: 0, iFfnGate: 0, iFfnUp: 0,
  };
  let fallbacks = 0;
  const planned: PlannedTensor[] = [];
  for (const t of ordered) {
    const dims = nDims(t.dims);
    const c = categoryOf(t.name);
    let to = t.ggmlType;
    let fallbackFrom: GgmlType | undefined;
    const allowed = allowsQuantization(t.name, dims, opts.leaveOutputTensor === true);
    if (allowed) {
      const named = t.name === "per_layer_token_embd.weight" && overrides.some((o) => o.re.test(t.name));
      if (tokenEmbeddingType !== undefined && c === "TOKEN_EMBD" && !named) to = tokenEmbeddingType;
      else if (outputTensorType !== undefined && c === "OUTPUT") to = outputTensorType;
      else {
        to = defaultType;
        if (defaultType.quantized) {
          const manual = overrides.find((o) => o.re.test(t.name));
          if (manual) to = manual.type;
          else if (opts.pure !== true) to = mixType(state, to, t.name, dims, c);
          const fitted = fallback(to, dims[0]);
          if (fitted !== to) {
            fallbacks++;
            fallbackFrom = to;
            to = fitted;
          }
        }
      }
    }
    if (dims[0] % to.blockSize !== 0) {
      throw bad(`tensor ${t.name}: its rows hold ${dims[0]} values, not whole blocks of ${to.blockSize} for ${to.name} (llama.cpp applies no fallback to a type given by option)`, "SHAPE_MISMATCH");
    }
    planned.push({ name: t.name, from: t.ggmlType, to, dims, quantize: to !== t.ggmlType, allowed, requiresImatrix: requiresImatrix(t.name, to, ftype), ...(fallbackFrom ? { fallbackFrom } : {}) });
  }
  if (opts.imatrix !== true) {
    // Refused even where the tensor has that type already, as llama.cpp checks before comparing types.
    const needs = planned.find((p) => p.requiresImatrix && p.allowed);
    if (needs) {
      throw bad(`${preset.name} needs an importance matrix (--imatrix FILE): tensor ${needs.name} would be ${needs.to.name}, which llama.cpp makes only with one ("this quantization requires an imatrix")`, "UNSUPPORTED_TYPE");
    }
  }
  for (const p of planned) {
    if (!p.quantize) continue;
    if (!canQuantize(p.to, true)) throw bad(`tensor ${p.name}: tensorcast does not write ${p.to.name}`, "UNSUPPORTED_TYPE");
    if (p.from.quantized && opts.allowRequantize !== true) {
      throw bad(`tensor ${p.name} is ${p.from.name} already: requantizing from type ${p.from.name} is disabled, as in llama-quantize (--allow-requantize dequantizes it first, losing more)`, "UNSUPPORTED_TYPE");
    }
    const readable = p.from.name === "F32" || p.from.name === "F16" || p.from.name === "BF16" || (p.from.quantized && canDequantize(p.from));
    if (!readable) throw bad(`tensor ${p.name}: cannot dequantize/convert tensor type ${p.from.name} (llama.cpp quantizes from F32, F16, BF16 and block types)`, "UNSUPPORTED_TYPE");
  }
  return { preset, fileType: ftype, facts, tensors: planned, metadata: quantizedMetadata(metadata.values(), ftype), fallbacks };
}
