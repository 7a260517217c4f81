/**
 * A Hugging Face folder -> the GGUF file convert_hf_to_gguf.py writes for it: every metadata key
 * in its order and every tensor's GGUF name, type, dimensions and value transform, planned from
 * the folder's JSON files and tensor headers alone (no tensor data), so the caller can stream
 * the tensors one at a time.
 *
 * Metadata order, as ModelBase.prepare_metadata and TextModel write it: general.architecture,
 * general.type, general.name (and the parts gguf-py finds in the folder's name), size label, the
 * hyperparameters with general.file_type among them (hparams.ts), general.quantization_version,
 * then the vocabulary. Tensor order: generated tensors first (Llama 3's rope_freqs), then the
 * shards by name, each shard's tensors by name (gguf-py's SafetensorsLocal sorts them), which the
 * caller gives; a mixture-of-experts block's merged expert tensors stand where its last expert
 * tensor arrived.
 */
import { TensorcastError } from "../../errors.js";
import { ggufTensorName } from "../gguf-hf/names.js";
import type { GgufMetadataEntry } from "../gguf/values.js";
import { hfArchitectureOf, type HfArchitecture, type HfExperts } from "./architectures.js";
import { modelIdParts, idToTitle, sizeLabel } from "./general.js";
import { findHparam, hyperparameterEntries, ropeParameters, textHparams, type Hparams } from "./hparams.js";
import { llama3Rope, llama3RopeFactors } from "./rope.js";
import { isObject, type Json } from "./json.js";
import { bpeVocabEntries } from "./vocab-bpe.js";
import { phi3VocabEntries, readSentencePieceModel, spmVocabEntries } from "./vocab-spm.js";

/** convert_hf_to_gguf.py's --outtype values we write, by our dtype names. */
export const HF_GGUF_OUTTYPES = ["float32", "float16", "bfloat16", "q8_0", "tq1_0", "tq2_0"] as const;
export type HfGgufOuttype = (typeof HF_GGUF_OUTTYPES)[number];

// LlamaFileType: ALL_F32, MOSTLY_F16, MOSTLY_BF16, MOSTLY_Q8_0, MOSTLY_TQ1_0, MOSTLY_TQ2_0
const FILE_TYPE: Record<HfGgufOuttype, number> = { float32: 0, float16: 1, bfloat16: 32, q8_0: 7, tq1_0: 36, tq2_0: 37 };
const GGML: Record<HfGgufOuttype, GgufTensorType> = { float32: "F32", float16: "F16", bfloat16: "BF16", q8_0: "Q8_0", tq1_0: "TQ1_0", tq2_0: "TQ2_0" };
/** Values per block of the block types gguf-py quantizes: a row that is not whole blocks is stored F16 instead. */
const BLOCK: Partial<Record<GgufTensorType, number>> = { Q8_0: 32, TQ1_0: 256, TQ2_0: 256 };

export type GgufTensorType = "F32" | "F16" | "BF16" | "Q8_0" | "TQ1_0" | "TQ2_0";

/**
 * convert_hf_to_gguf's `--outtype auto` (its default): the type of the first tensor of two or more
 * dimensions that is bfloat16 (bfloat16) or float16 (float16), in the order it reads them;
 * float32 tensors are passed over, and a folder with neither gets float16.
 * @example autoOuttype([{ name: "w", dtype: "float32", shape: [4, 4] }]) // "float16"
 */
export function autoOuttype(tensors: readonly HfTensorHeader[]): "bfloat16" | "float16" {
  for (const t of tensors) {
    if (t.shape.length < 2) continue;
    if (t.dtype === "bfloat16") return "bfloat16";
    if (t.dtype === "float16") return "float16";
  }
  return "float16";
}

/** A folder's tensor as its header describes it. */
export interface HfTensorHeader {
  readonly name: string;
  /** safetensors dtype in our names: float32, float16, bfloat16 (others are refused). */
  readonly dtype: string;
  /** Row-major. */
  readonly shape: readonly number[];
}

/** What is done to a tensor's float32 values before they are stored. */
export type HfTensorTransform =
  | { readonly kind: "identity" }
  /** LlamaModel.permute: each head's rotary halves interleaved (rows (h, j, i) -> (h, i, j)). */
  | { readonly kind: "permute-rotary"; readonly heads: number }
  /** Gemma's norms: float32 w + 1. */
  | { readonly kind: "plus-one" };

/** A folder tensor a GGUF tensor is read from. */
export interface HfTensorPart {
  readonly name: string;
  /** safetensors dtype in our names. */
  readonly dtype: string;
}

export interface HfGgufTensor {
  /** The GGUF name. */
  readonly name: string;
  /**
   * The folder's tensor it is made from; for merged experts the experts' names with `*` for the
   * expert number; for a generated tensor what it is made from, in brackets.
   */
  readonly source: string;
  /**
   * The folder's tensors read, in the order their values are stored: one; a block's experts, in
   * expert order, each one a slice of the leading dimension (torch.stack); none for a generated one.
   */
  readonly parts: readonly HfTensorPart[];
  /** A generated tensor's float32 values (`parts` is empty). */
  readonly generated?: Float32Array;
  readonly type: GgufTensorType;
  /** Row-major, as the folder has it (merged experts: the expert count first). */
  readonly shape: readonly number[];
  /** GGML order (fastest first): every dimension of the shape, reversed, as gguf-py writes them. */
  readonly dims: readonly number[];
  readonly transform: HfTensorTransform;
}

/** The folder's files the conversion reads besides the tensors. */
export interface HfFolderFiles {
  /** The folder's own name: gguf-py names the model after it. */
  readonly folderName: string;
  readonly config: Json;
  readonly tokenizerJson?: Json;
  readonly tokenizerConfig?: Json;
  readonly tokenizerModel?: Uint8Array;
  readonly chatTemplateJinja?: string;
  readonly chatTemplateJson?: Json;
}

export interface HfGgufPlan {
  readonly architecture: string;
  readonly metadata: readonly GgufMetadataEntry[];
  readonly tensors: readonly HfGgufTensor[];
  /** What the conversion chose where convert_hf_to_gguf.py would have stopped (tokenizer.ggml.pre). */
  readonly notes: readonly string[];
}

export interface HfGgufPlanOptions {
  /** tokenizer.ggml.pre for a BPE tokenizer whose check-text hash convert_hf_to_gguf.py does not know. */
  readonly tokenizerPre?: string;
}

const SKIPPED_SUFFIXES = [".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq"];
const SOURCE_DTYPES = ["float32", "float16", "bfloat16"];

function checkDtype(t: HfTensorHeader): void {
  if (!SOURCE_DTYPES.includes(t.dtype)) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `tensor ${JSON.stringify(t.name)} is ${t.dtype}; convertible: ${SOURCE_DTYPES.join(", ")}`);
  }
}

/** The stored type of a GGUF tensor, by TextModel.prepare_tensors' rules. */
function storedType(name: string, shape: readonly number[], outtype: HfGgufOuttype): GgufTensorType {
  let type: GgufTensorType = GGML[outtype];
  // 1-D tensors, norms, the MoE router and anything not a .weight stay float32
  if (shape.length <= 1 || name.endsWith("_norm.weight") || /^blk\.\d+\.ffn_gate_inp\.weight$/.test(name) || !name.endsWith(".weight")) type = "F32";
  // ... and the ternary types keep the token embedding and the output in F16
  else if ((type === "TQ1_0" || type === "TQ2_0") && (name === "token_embd.weight" || name === "output.weight")) type = "F16";
  // gguf-py refuses rows that are not whole blocks and convert_hf_to_gguf falls back to F16
  const block = BLOCK[type];
  if (block !== undefined && (shape[shape.length - 1] ?? 0) % block !== 0) type = "F16";
  return type;
}

const dimsOf = (shape: readonly number[]): number[] => (shape.length === 0 ? [1] : [...shape].reverse());

/** A folder tensor that is not an expert's (planTensors has passed over the skipped ones). */
function tensorPlan(arch: HfArchitecture, h: Hparams, outtype: HfGgufOuttype, t: HfTensorHeader, vocabRows: number | undefined): HfGgufTensor {
  checkDtype(t);
  const hfName = t.name.replace("language_model.", "");
  let name = routerName(arch.experts, hfName) ?? ggufTensorName(arch.names, hfName);
  if (arch.noDenseFfn === true && name !== undefined && /^blk\.\d+\.ffn_(gate|up|down)\./.test(name)) name = undefined;
  if (name === undefined) throw new TensorcastError("INVALID_DATA", `tensor ${JSON.stringify(t.name)} has no GGUF name for ${arch.gguf} (convert_hf_to_gguf: "Can not map tensor")`);
  let transform: HfTensorTransform = { kind: "identity" };
  if (arch.permuteQK) {
    const heads = h.num_attention_heads;
    const kv = "num_key_value_heads" in h ? h.num_key_value_heads : heads;
    if (/q_proj\.(weight|bias)$/.test(hfName)) transform = { kind: "permute-rotary", heads: heads as number };
    else if (/k_proj\.(weight|bias)$/.test(hfName)) transform = { kind: "permute-rotary", heads: (kv ?? heads) as number };
    if (transform.kind === "permute-rotary" && (!Number.isInteger(transform.heads) || transform.heads <= 0 || (t.shape[0] ?? 0) % (2 * transform.heads) !== 0)) {
      throw new TensorcastError("INVALID_DATA", `tensor ${JSON.stringify(t.name)} of shape [${t.shape.join(", ")}] does not split into ${String(transform.heads)} heads of two rotary halves`);
    }
  }
  if (arch.normPlusOne && /norm\.weight$/.test(hfName)) transform = { kind: "plus-one" };
  let shape = t.shape;
  // Gemma 3 keeps only the embedding rows the vocabulary has
  if (arch.gguf === "gemma3" && hfName.includes("embed_tokens.weight") && vocabRows !== undefined && (shape[0] ?? 0) > vocabRows) {
    shape = [vocabRows, ...shape.slice(1)];
  }
  const type = storedType(name, t.shape, outtype);
  return { name, source: t.name, parts: [{ name: t.name, dtype: t.dtype }], type, shape, dims: dimsOf(shape), transform };
}

/** The router's GGUF name when `hfName` is a mixture-of-experts block's router. */
function routerName(experts: HfExperts | undefined, hfName: string): string | undefined {
  if (experts === undefined) return undefined;
  const m = /^model\.layers\.(0|[1-9][0-9]{0,8})\.(.+)\.weight$/.exec(hfName);
  return m !== null && m[2] === experts.router ? `blk.${m[1]}.ffn_gate_inp.weight` : undefined;
}

/** The block number convert_hf_to_gguf reads from a name: its first all-digit part. */
function blockOf(name: string): number | undefined {
  const part = name.split(".").find((p) => p !== "" && /^[0-9]+$/.test(p));
  return part === undefined ? undefined : Number(part);
}

/**
 * The tensors in convert_hf_to_gguf's order, a block's expert tensors held back until the block
 * has all of them (each weight's, for every expert), then merged into one tensor per weight, stacked in expert order.
 */
function planTensors(arch: HfArchitecture, h: Hparams, outtype: HfGgufOuttype, tensors: readonly HfTensorHeader[], vocabRows: number | undefined): HfGgufTensor[] {
  const out: HfGgufTensor[] = [];
  const ex = arch.experts;
  const held = new Map<number, Map<string, HfTensorHeader>>();
  let count: number | undefined;
  const expertCount = (): number => {
    if (count !== undefined) return count;
    const v = findHparam(h, ex!.countKeys);
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
      throw new TensorcastError("INVALID_DATA", `config.json: ${ex!.countKeys.join(" / ")} is ${JSON.stringify(v)}, not an expert count (the folder has expert tensors)`);
    }
    return (count = v);
  };
  for (const t of tensors) {
    if (SKIPPED_SUFFIXES.some((s) => t.name.endsWith(s)) || arch.skip?.includes(t.name)) continue;
    const hfName = t.name.replace("language_model.", "");
    if (ex === undefined || !hfName.includes(ex.marker)) {
      out.push(tensorPlan(arch, h, outtype, t, vocabRows));
      continue;
    }
    checkDtype(t);
    const bid = blockOf(hfName);
    if (bid === undefined) throw new TensorcastError("INVALID_DATA", `expert tensor ${JSON.stringify(t.name)} names no block (convert_hf_to_gguf asserts one)`);
    if (/\.experts\.(gate_up_proj|down_proj)(\.weight)?$/.test(hfName)) {
      throw new TensorcastError("UNSUPPORTED_TYPE", `tensor ${JSON.stringify(t.name)}: experts already fused into one tensor are not converted; convertible: one tensor per expert (model.layers.N.${ex.prefix}.E.${ex.weights[0]![0]}.weight)`);
    }
    const block = held.get(bid) ?? new Map<string, HfTensorHeader>();
    held.set(bid, block);
    block.set(hfName, t);
    const n = expertCount();
    if (block.size < ex.weights.length * n) continue;
    for (const [w, gguf] of ex.weights) {
      const parts: HfTensorHeader[] = [];
      for (let x = 0; x < n; x++) {
        const want = `model.layers.${bid}.${ex.prefix}.${x}.${w}.weight`;
        const p = block.get(want);
        if (p === undefined) throw new TensorcastError("INVALID_DATA", `block ${bid} has ${block.size} expert tensors but not ${want} (${n} experts of ${ex.weights.map((x) => x[0]).join(", ")})`);
        block.delete(want);
        parts.push(p);
      }
      const shape0 = parts[0]!.shape;
      const odd = parts.find((p) => p.shape.length !== shape0.length || p.shape.some((d, i) => d !== shape0[i]));
      if (odd !== undefined) throw new TensorcastError("INVALID_DATA", `expert tensors ${parts[0]!.name} [${shape0.join(", ")}] and ${odd.name} [${odd.shape.join(", ")}] cannot be stacked`);
      const shape = [n, ...shape0];
      const name = `blk.${bid}.${gguf}.weight`;
      out.push({
        name, source: `model.layers.${bid}.${ex.prefix}.*.${w}.weight`, parts: parts.map((p) => ({ name: p.name, dtype: p.dtype })),
        type: storedType(name, shape, outtype), shape, dims: dimsOf(shape), transform: { kind: "identity" },
      });
    }
  }
  const left = [...held.values()].flatMap((b) => [...b.keys()]);
  if (left.length > 0) {
    throw new TensorcastError("INVALID_DATA", `expert tensors not merged (convert_hf_to_gguf: "Unprocessed experts"): ${left.slice(0, 4).join(", ")}${left.length > 4 ? `, ... (${left.length})` : ""}; each block needs ${count ?? "?"} experts of ${ex!.weights.map((x) => x[0]).join(", ")}`);
  }
  return out;
}

/** LlamaModel.generate_extra_tensors: Llama 3's rope factors as rope_freqs.weight, for llama only. */
function generatedTensors(arch: HfArchitecture, h: Hparams): HfGgufTensor[] {
  if (arch.gguf !== "llama") return [];
  const r = llama3Rope(ropeParameters(h), h);
  if (r === undefined) return [];
  const values = llama3RopeFactors(r);
  const shape = [values.length];
  return [{ name: "rope_freqs.weight", source: "(rope_parameters, llama3)", parts: [], generated: values, type: "F32", shape, dims: dimsOf(shape), transform: { kind: "identity" } }];
}

/** gguf-py's get_total_parameter_count: a tensor named *_exps.* of 3 or more dimensions counts as experts. */
function parameterCounts(tensors: readonly HfGgufTensor[]): ParamCounts {
  let total = 0;
  let shared = 0;
  let expert = 0;
  let expertSum = 0;
  let expertTensors = 0;
  for (const t of tensors) {
    const size = t.shape.reduce((a, b) => a * b, 1);
    if (t.name.includes("_exps.") && t.shape.length >= 3) {
      const n = t.shape[t.shape.length - (t.name.includes(".bias") ? 2 : 3)]!;
      expert += Math.floor(size / n);
      expertSum += n;
      expertTensors++;
    } else shared += size;
    total += size;
  }
  return { total, shared, expert, experts: expertTensors > 0 ? Math.floor(expertSum / expertTensors) : 0 };
}

interface ParamCounts {
  readonly total: number;
  readonly shared: number;
  readonly expert: number;
  /** The mean expert count of the expert tensors, 0 without them. */
  readonly experts: number;
}

function generalEntries(folderName: string, h: Hparams, counts: ParamCounts): GgufMetadataEntry[] {
  const totalParams = counts.total;
  const str = (key: string, value: string): GgufMetadataEntry => ({ key, type: "string", value });
  let name: string | undefined;
  let org: string | undefined;
  let basename: string | undefined;
  let finetune: string | undefined;
  let version: string | undefined;
  let size: string | undefined;
  const take = (id: string): void => {
    const p = modelIdParts(id, totalParams);
    name ??= p.name === undefined ? undefined : idToTitle(p.name);
    org ??= p.organization === undefined ? undefined : idToTitle(p.organization);
    basename ??= p.basename;
    finetune ??= p.finetune;
    version ??= p.version;
    size ??= p.sizeLabel;
  };
  const nameOrPath = h._name_or_path;
  if (typeof nameOrPath === "string" && (nameOrPath.match(/\//g) ?? []).length <= 1) take(nameOrPath);
  take(folderName);
  // gguf-py's size_label: "8x7B" (experts x shared plus one expert's parameters) for a mixture of experts
  size ??= totalParams > 0 ? (counts.experts > 0 ? `${counts.experts}x${sizeLabel(counts.shared + counts.expert)}` : sizeLabel(totalParams)) : undefined;
  const out = [str("general.type", "model"), str("general.name", name ?? folderName)];
  if (version !== undefined) out.push(str("general.version", version));
  if (org !== undefined) out.push(str("general.organization", org));
  if (finetune !== undefined) out.push(str("general.finetune", finetune));
  if (basename !== undefined) out.push(str("general.basename", basename));
  if (size !== undefined) out.push(str("general.size_label", size));
  return out;
}

/**
 * The GGUF convert_hf_to_gguf.py writes for a folder, `tensors` in the order it reads them.
 * @throws TensorcastError UNSUPPORTED_TYPE for a model class, tokenizer or tensor type not
 *         converted (naming what is); INVALID_DATA for a config or tensor that does not fit.
 */
export function planHfToGguf(files: HfFolderFiles, tensors: readonly HfTensorHeader[], outtype: HfGgufOuttype, opts: HfGgufPlanOptions = {}): HfGgufPlan {
  if (!HF_GGUF_OUTTYPES.includes(outtype)) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `GGUF output type ${JSON.stringify(outtype)}; convertible: ${HF_GGUF_OUTTYPES.join(", ")}`);
  }
  const { arch } = hfArchitectureOf(files.config);
  const h = textHparams(files.config);
  const vocabRows = arch.gguf === "gemma3" ? gemma3VocabRows(files, h) : undefined;
  const planned = [...generatedTensors(arch, h), ...planTensors(arch, h, outtype, tensors, vocabRows)];
  const seen = new Set<string>();
  for (const t of planned) {
    if (seen.has(t.name)) throw new TensorcastError("INVALID_DATA", `two tensors of the folder map to ${t.name}`);
    seen.add(t.name);
  }
  const notes: string[] = [];
  const metadata: GgufMetadataEntry[] = [
    { key: "general.architecture", type: "string", value: arch.gguf },
    ...generalEntries(files.folderName, h, parameterCounts(planned)),
    ...hyperparameterEntries(h, arch, FILE_TYPE[outtype]),
    { key: "general.quantization_version", type: "uint32", value: 2 },
    ...vocabEntries(files, arch, h, { given: opts.tokenizerPre, notes }),
  ];
  return { architecture: arch.gguf, metadata: dedupeKeys(metadata), tensors: planned, notes };
}

/** Gemma3Model.modify_tensors' n_vocab_real: the SentencePiece vocabulary's size, else tokenizer.json's tokens. */
function gemma3VocabRows(files: HfFolderFiles, h: Hparams): number | undefined {
  if (files.tokenizerModel !== undefined) {
    return typeof h.vocab_size === "number" && h.vocab_size > 0 ? h.vocab_size : readSentencePieceModel(files.tokenizerModel).length;
  }
  const tok = files.tokenizerJson;
  if (!isObject(tok) || !isObject(tok.model) || !isObject(tok.model.vocab)) return undefined;
  return Object.keys(tok.model.vocab).length + (Array.isArray(tok.added_tokens) ? tok.added_tokens.length : 0);
}

/** gguf-py's add_key_value for a key given twice: the later value, in the earlier place. */
function dedupeKeys(entries: readonly GgufMetadataEntry[]): GgufMetadataEntry[] {
  const at = new Map<string, number>();
  const out: GgufMetadataEntry[] = [];
  for (const e of entries) {
    const i = at.get(e.key);
    if (i === undefined) {
      at.set(e.key, out.length);
      out.push(e);
    } else out[i] = e;
  }
  return out;
}

function vocabEntries(files: HfFolderFiles, arch: HfArchitecture, h: Hparams, pre: { given?: string; notes: string[] }): GgufMetadataEntry[] {
  const out: GgufMetadataEntry[] = [];
  const vocabSize = typeof h.vocab_size === "number" ? h.vocab_size : undefined;
  const spaceless: GgufMetadataEntry = { key: "tokenizer.ggml.add_space_prefix", type: "bool", value: false };
  const bpe = (): GgufMetadataEntry[] => {
    if (files.tokenizerJson === undefined) throw new TensorcastError("INVALID_DATA", "the folder has neither tokenizer.model nor tokenizer.json");
    return bpeVocabEntries({ ...files, tokenizerJson: files.tokenizerJson }, vocabSize, pre);
  };
  const needSpm = (): void => {
    if (files.tokenizerModel === undefined) throw new TensorcastError("INVALID_DATA", `${arch.gguf} needs tokenizer.model (SentencePiece), which the folder lacks`);
  };
  switch (arch.vocab) {
    case "spm-or-bpe": {
      if (arch.addPrefixSpaceKey && isObject(files.tokenizerConfig)) {
        const aps = files.tokenizerConfig.add_prefix_space;
        if (aps !== undefined && aps !== null) out.push({ key: "tokenizer.ggml.add_space_prefix", type: "bool", value: aps as boolean });
      }
      if (files.tokenizerModel !== undefined) out.push(...spmVocabEntries(files, vocabSize));
      else if (arch.gguf === "llama" && llamaHfTokenizer(files.tokenizerJson)) {
        throw new TensorcastError("UNSUPPORTED_TYPE", "a Llama tokenizer.json with byte fallback and no tokenizer.model (convert_hf_to_gguf's LlamaHfVocab) is not converted");
      } else out.push(...bpe());
      if (arch.gguf === "llama" && vocabSize === 32016) throw new TensorcastError("UNSUPPORTED_TYPE", "CodeLlama's infill tokens (vocab_size 32016) are not converted");
      if (arch.gguf === "llama" && vocabSize === 49152) out.push({ key: "tokenizer.ggml.add_bos_token", type: "bool", value: false });
      return out;
    }
    case "bpe":
      return bpe();
    case "gemma":
      needSpm();
      return [...spmVocabEntries(files, vocabSize), spaceless];
    case "gemma3":
      return files.tokenizerModel !== undefined ? [...spmVocabEntries(files, vocabSize), spaceless] : bpe();
    case "phi3": {
      const tc = files.tokenizerConfig;
      if (isObject(tc)) {
        if (!("tokenizer_class" in tc)) throw new TensorcastError("INVALID_DATA", "Phi-3: tokenizer_config.json has no tokenizer_class (convert_hf_to_gguf reads it)");
        if (tc.tokenizer_class === "GPT2Tokenizer") return bpe();
      }
      needSpm();
      return phi3VocabEntries(files, vocabSize);
    }
  }
}

/** LlamaHfVocab's test: a BPE tokenizer.json with byte fallback and a Sequence decoder (a Llama 2 style one). */
function llamaHfTokenizer(tok: Json | undefined): boolean {
  const model = isObject(tok) ? tok.model : undefined;
  if (!isObject(model) || !isObject(tok)) return false;
  const llama3 = model.type === "BPE" && model.ignore_merges === true && model.byte_fallback === false;
  return !llama3 && model.type === "BPE" && model.byte_fallback === true && isObject(tok.decoder) && tok.decoder.type === "Sequence";
}
