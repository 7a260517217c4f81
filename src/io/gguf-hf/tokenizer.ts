/**
 * tokenizer.json and tokenizer_config.json from a GGUF vocabulary, as transformers builds them
 * when it loads the file (`AutoTokenizer.from_pretrained(DIR, gguf_file=...)`) and then saves:
 *
 * - `tokenizer.ggml.model = "gpt2"`: byte-level BPE with the file's merges, tokens respelled in
 *   GPT-2's byte alphabet, split by the regex its `tokenizer.ggml.pre` names;
 * - `"llama"` (SentencePiece): BPE with byte fallback, merges recovered from the scores
 *   (merges.ts), with Llama's Metaspace, Gemma's space handling, or Phi-3's normalizer by architecture.
 *
 * Tokens the file marks as control become special added tokens and user-defined ones plain added
 * tokens, so they are matched whole.
 */
import { TensorcastError } from "../../errors.js";
import type { GgufHfArchitecture } from "./architectures.js";
import { mergesFromScores } from "./merges.js";
import { getCount, getNumbers, getString, getStrings, type GgufMetadata } from "./metadata.js";
import { toJsonText, type OrderedJson } from "./json.js";
import { BYTE_CHARS } from "../tokenizer/bpe.js";
import { utf8Encode } from "../utf8.js";

/** llama.cpp's token types. */
const CONTROL = 3;
const USER_DEFINED = 4;

const LLAMA3_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const TEKKEN_SPLIT =
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const GPT4O_SPLIT =
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** The split regex each `tokenizer.ggml.pre` stands for (transformers' table, for the ones it knows). */
const PRE_SPLITS: Readonly<Record<string, string>> = {
  llama3: LLAMA3_SPLIT, "llama-v3": LLAMA3_SPLIT, "llama-bpe": LLAMA3_SPLIT, falcon3: LLAMA3_SPLIT,
  "falcon-h1": LLAMA3_SPLIT, pixtral: LLAMA3_SPLIT, "midm-2.0": LLAMA3_SPLIT, lfm2: LLAMA3_SPLIT,
  "jina-v5-nano": LLAMA3_SPLIT, dbrx: LLAMA3_SPLIT, "smaug-bpe": LLAMA3_SPLIT,
  tekken: TEKKEN_SPLIT,
  qwen2: QWEN2_SPLIT, "deepseek-r1-qwen": QWEN2_SPLIT, kormo: QWEN2_SPLIT, f2llmv2: QWEN2_SPLIT, megrez: QWEN2_SPLIT,
  "gpt-4o": GPT4O_SPLIT, llama4: GPT4O_SPLIT, kanana2: GPT4O_SPLIT, talkie: GPT4O_SPLIT, "minimax-m2": GPT4O_SPLIT,
};

type Builder = "sentencepiece" | "gemma" | "phi3" | "byte-level";

interface ClassSpecials {
  readonly bos?: string;
  readonly eos?: string;
  readonly unk?: string;
  readonly pad?: string;
  readonly mask?: string;
}

/** The special tokens each transformers tokenizer class starts with, in the order it adds them. */
const CLASS_SPECIALS: Record<Builder, ClassSpecials> = {
  sentencepiece: { bos: "<s>", eos: "</s>", unk: "<unk>" },
  phi3: { bos: "<s>", eos: "</s>", unk: "<unk>" },
  gemma: { bos: "<bos>", eos: "<eos>", unk: "<unk>", pad: "<pad>", mask: "<mask>" },
  "byte-level": { bos: "<|endoftext|>", eos: "<|endoftext|>", unk: "<|endoftext|>" },
};

/** The class transformers' AutoTokenizer picks for each architecture, as tokenizer_config.json records it. */
const TOKENIZER_CLASS: Record<GgufHfArchitecture, string> = {
  llama: "TokenizersBackend",
  phi3: "TokenizersBackend",
  gemma2: "GemmaTokenizer",
  gemma3: "GemmaTokenizer",
  qwen2: "Qwen2Tokenizer",
  qwen3: "Qwen2Tokenizer",
};

/** The files, as text, keyed by file name. */
export type TokenizerFiles = Record<string, string>;

/** Python's str.isspace() set, for Gemma's all-space tokens. */
function isPythonSpace(cp: number): boolean {
  return (
    (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp === 0x85 || cp === 0xa0 || cp === 0x1680 ||
    (cp >= 0x2000 && cp <= 0x200a) || cp === 0x2028 || cp === 0x2029 || cp === 0x202f || cp === 0x205f || cp === 0x3000
  );
}

/**
 * tokenizer.json, tokenizer_config.json and (when the file has one) chat_template.jinja for a
 * GGUF vocabulary. UNSUPPORTED_TYPE for tokenizer models other than gpt2 and llama.
 */
export function hfTokenizerFiles(arch: GgufHfArchitecture, meta: GgufMetadata): TokenizerFiles {
  const model = getString(meta, "tokenizer.ggml.model");
  const tokens = getStrings(meta, "tokenizer.ggml.tokens");
  if (tokens === undefined) throw new TensorcastError("INVALID_DATA", "GGUF metadata has no tokenizer.ggml.tokens");
  const types = getNumbers(meta, "tokenizer.ggml.token_type");
  const scores = getNumbers(meta, "tokenizer.ggml.scores");
  const fileMerges = getStrings(meta, "tokenizer.ggml.merges");
  for (const [name, list] of [["token_type", types], ["scores", scores]] as const) {
    if (list !== undefined && list.length !== tokens.length) {
      throw new TensorcastError("INVALID_DATA", `GGUF tokenizer.ggml.${name} has ${list.length} entries for ${tokens.length} tokens`);
    }
  }
  let builder: Builder;
  if (model === "gpt2") builder = "byte-level";
  else if (model === "llama") builder = arch === "gemma2" || arch === "gemma3" ? "gemma" : arch === "phi3" ? "phi3" : "sentencepiece";
  else {
    throw new TensorcastError(
      "UNSUPPORTED_TYPE",
      `GGUF tokenizer.ggml.model "${model ?? "(none)"}" cannot be converted to tokenizer.json; supported: gpt2 (byte-level BPE), llama (SentencePiece)`,
    );
  }

  // the vocabulary as the tokenizer sees it
  let spelled: string[];
  if (builder === "byte-level") {
    const alphabet = BYTE_CHARS;
    const inAlphabet = new Set(alphabet);
    spelled = tokens.map((t) => {
      for (const ch of t) if (!inAlphabet.has(ch)) return Array.from(utf8Encode(t), (b) => alphabet[b]!).join("");
      return t;
    });
  } else if (builder === "gemma") {
    // Gemma stores runs of spaces as spaces; the tokenizer looks them up as U+2581
    spelled = tokens.map((t) => {
      const cps = Array.from(t);
      return t.includes(" ") && cps.every((c) => isPythonSpace(c.codePointAt(0)!)) ? "\u2581".repeat(cps.length) : t;
    });
  } else {
    spelled = [...tokens];
  }
  const vocab = new Map<string, number>();
  spelled.forEach((t, i) => vocab.set(t, i));

  let merges: Array<readonly [string, string]>;
  if (fileMerges !== undefined) {
    merges = fileMerges.map((m) => {
      const parts = m.split(" ");
      if (parts.length !== 2) throw new TensorcastError("INVALID_DATA", `GGUF merge ${JSON.stringify(m)} is not two tokens separated by one space`);
      return [parts[0]!, parts[1]!] as const;
    });
  } else if (builder === "gemma") {
    // Gemma's scores do not follow its merge order; its token order does
    merges = mergesFromScores(spelled, (i) => -i);
  } else if (scores !== undefined) {
    merges = mergesFromScores(spelled, (i) => scores[i]!);
  } else {
    throw new TensorcastError("INVALID_DATA", "GGUF vocabulary has neither tokenizer.ggml.merges nor tokenizer.ggml.scores");
  }

  // added tokens: the class's own specials, then the file's control and user-defined tokens
  const added = new Map<string, { id: number; special: boolean }>();
  let nextId = vocab.size;
  const addToken = (content: string, special: boolean, override: boolean): void => {
    const had = added.get(content);
    if (had !== undefined) {
      if (override) had.special = special;
      return;
    }
    const id = vocab.get(content) ?? nextId++;
    added.set(content, { id, special });
  };
  const cls = CLASS_SPECIALS[builder];
  for (const k of ["bos", "eos", "unk", "pad", "mask"] as const) {
    const t = cls[k];
    if (t !== undefined) addToken(t, true, false);
  }
  if (types !== undefined) {
    const alphabet = builder === "byte-level" ? new Set(BYTE_CHARS) : undefined;
    tokens.forEach((t, i) => {
      if (types[i] !== CONTROL) return;
      // a byte-level "control" token spelled outside the byte alphabet is a llama.cpp mislabel
      if (alphabet !== undefined && !Array.from(t).every((c) => alphabet.has(c))) return;
      addToken(t, true, true);
    });
    tokens.forEach((t, i) => {
      if (types[i] === USER_DEFINED && vocab.has(t)) addToken(t, false, true);
    });
  }
  const special = (k: string): string | null => {
    const id = getCount(meta, `tokenizer.ggml.${k}`);
    if (id === undefined) return null;
    const t = tokens[id];
    if (t === undefined) throw new TensorcastError("INVALID_DATA", `GGUF tokenizer.ggml.${k} is ${id}, past the ${tokens.length} tokens`);
    return t;
  };
  const fileSpecials = {
    bos: special("bos_token_id"),
    eos: special("eos_token_id"),
    unk: special("unknown_token_id"),
    pad: special("padding_token_id"),
  };
  for (const t of [fileSpecials.bos, fileSpecials.eos, fileSpecials.unk, fileSpecials.pad]) {
    if (t !== null) addToken(t, true, false);
  }
  const addedTokens = [...added].sort((a, b) => a[1].id - b[1].id).map(([content, a]): OrderedJson => new Map<string, OrderedJson>([
    ["id", a.id], ["content", content], ["single_word", false], ["lstrip", false], ["rstrip", false],
    ["normalized", false], ["special", a.special],
  ]));

  const obj = (entries: Array<[string, OrderedJson]>): OrderedJson => new Map(entries);
  const metaspaceDecoder = (strip: boolean): OrderedJson => obj([["type", "Sequence"], ["decoders", [
    obj([["type", "Replace"], ["pattern", obj([["String", "\u2581"]])], ["content", " "]]),
    obj([["type", "ByteFallback"]]),
    obj([["type", "Fuse"]]),
    ...(strip ? [obj([["type", "Strip"], ["content", " "], ["start", 1], ["stop", 0]])] : []),
  ]]]);
  let normalizer: OrderedJson = null;
  let preTokenizer: OrderedJson = null;
  let decoder: OrderedJson;
  const byteLevelModel = builder === "byte-level";
  switch (builder) {
    case "byte-level":
      preTokenizer = obj([["type", "ByteLevel"], ["add_prefix_space", false], ["trim_offsets", true], ["use_regex", true]]);
      decoder = obj([["type", "ByteLevel"], ["add_prefix_space", true], ["trim_offsets", true], ["use_regex", true]]);
      break;
    case "sentencepiece":
      preTokenizer = obj([["type", "Metaspace"], ["replacement", "\u2581"], ["prepend_scheme", "first"], ["split", false]]);
      decoder = metaspaceDecoder(true);
      break;
    case "phi3":
      // the prefix space comes from a normalizer, so "  hi" keeps both spaces
      normalizer = obj([["type", "Sequence"], ["normalizers", [
        obj([["type", "Prepend"], ["prepend", "\u2581"]]),
        obj([["type", "Replace"], ["pattern", obj([["String", " "]])], ["content", "\u2581"]]),
      ]]]);
      decoder = metaspaceDecoder(true);
      break;
    case "gemma":
      normalizer = obj([["type", "Replace"], ["pattern", obj([["String", " "]])], ["content", "\u2581"]]);
      preTokenizer = obj([["type", "Split"], ["pattern", obj([["String", " "]])], ["behavior", "MergedWithPrevious"], ["invert", false]]);
      decoder = metaspaceDecoder(false);
      break;
  }
  const pre = getString(meta, "tokenizer.ggml.pre");
  const split = pre === undefined ? undefined : PRE_SPLITS[pre];
  if (split !== undefined) {
    preTokenizer = obj([["type", "Sequence"], ["pretokenizers", [
      obj([["type", "Split"], ["pattern", obj([["Regex", split]])], ["behavior", "Isolated"], ["invert", false]]),
      obj([["type", "ByteLevel"], ["add_prefix_space", false], ["trim_offsets", true], ["use_regex", false]]),
    ]]]);
  }
  const seq = (id: string, typeId: number): OrderedJson => obj([["Sequence", obj([["id", id], ["type_id", typeId]])]]);
  const tokenizerJson = obj([
    ["version", "1.0"],
    ["truncation", null],
    ["padding", null],
    ["added_tokens", addedTokens],
    ["normalizer", normalizer],
    ["pre_tokenizer", preTokenizer],
    // transformers adds no BOS/EOS to GGUF tokenizers, whatever tokenizer.ggml.add_bos_token says
    ["post_processor", obj([["type", "TemplateProcessing"], ["single", [seq("A", 0)]], ["pair", [seq("A", 0), seq("B", 1)]], ["special_tokens", obj([])]])],
    ["decoder", decoder],
    ["model", obj([
      ["type", "BPE"],
      ["dropout", null],
      ["unk_token", builder === "gemma" ? "<unk>" : null],
      ["continuing_subword_prefix", byteLevelModel ? "" : null],
      ["end_of_word_suffix", byteLevelModel ? "" : null],
      ["fuse_unk", !byteLevelModel],
      ["byte_fallback", !byteLevelModel],
      ["ignore_merges", false],
      ["vocab", orderedVocab(vocab)],
      ["merges", merges.map((m) => [m[0], m[1]])],
    ])],
  ]);

  const cfg = new Map<string, OrderedJson>();
  if (TOKENIZER_CLASS[arch] === "Qwen2Tokenizer") cfg.set("add_prefix_space", null);
  cfg.set("backend", "tokenizers");
  cfg.set("bos_token", fileSpecials.bos ?? cls.bos ?? null);
  cfg.set("eos_token", fileSpecials.eos ?? cls.eos ?? null);
  // the two keys transformers records for a folder loaded from disk
  cfg.set("is_local", true);
  cfg.set("local_files_only", false);
  if (builder === "gemma") cfg.set("mask_token", cls.mask ?? null);
  cfg.set("model_max_length", MODEL_MAX_LENGTH);
  cfg.set("pad_token", fileSpecials.pad);
  cfg.set("tokenizer_class", TOKENIZER_CLASS[arch]);
  cfg.set("unk_token", fileSpecials.unk);

  const files: TokenizerFiles = {
    "tokenizer.json": toJsonText(tokenizerJson),
    "tokenizer_config.json": toJsonText(cfg, true),
  };
  const template = getString(meta, "tokenizer.chat_template");
  if (template !== undefined) files["chat_template.jinja"] = template;
  return files;
}

/** transformers' "no limit", int(1e30), written as the integer Python prints. */
const MODEL_MAX_LENGTH: OrderedJson = { rawNumber: "1000000000000000019884624838656" };

function orderedVocab(vocab: Map<string, number>): OrderedJson {
  const entries = [...vocab].sort((a, b) => a[1] - b[1]);
  return new Map<string, OrderedJson>(entries);
}
