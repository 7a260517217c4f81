/**
 * A byte-level BPE vocabulary (tokenizer.json) as convert_hf_to_gguf.py's _set_vocab_gpt2 writes
 * it: every id below config.json's vocab_size in order ("[PADi]", UNUSED, for an id no token
 * has), added tokens CONTROL when special or special-looking and USER_DEFINED otherwise, then
 * gguf-py's SpecialVocab with merges.
 *
 * tokenizer.ggml.pre: as convert_hf_to_gguf's get_vocab_base_pre, the name its table gives the
 * SHA-256 of the ids the folder's tokenizer gives for a check text (src/io/tokenizer/ runs the
 * tokenizer). For a hash not in that table, where convert_hf_to_gguf stops, the name the caller
 * gives (--tokenizer-pre), else the name of the Split regex tokenizer.json carries
 * (PRE_BY_REGEX), said in the notes; with neither, refused.
 *
 * Not done: convert_hf_to_gguf re-spells an added token whose `normalized` is false as the
 * tokenizer decodes its encoding; the spelling is kept here (the same for the usual `<|...|>`).
 */
import { TensorcastError } from "../../errors.js";
import type { GgufMetadataEntry } from "../gguf/values.js";
import { isObject, type Json } from "./json.js";
import { checkHash } from "../tokenizer/check-hash.js";
import { PRE_BY_HASH } from "../tokenizer/pre-hashes.js";
import { specialVocabEntries, type SpecialVocabInput } from "./special-vocab.js";

export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

/** Pre-tokenizer regexes (as tokenizer.json spells them) -> tokenizer.ggml.pre. */
export const PRE_BY_REGEX: Readonly<Record<string, string>> = {
  // Llama 3
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": "llama-bpe",
  // Qwen 2 and 3: digits one at a time
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": "qwen2",
};

/** gguf-py's does_token_look_special. */
export function looksSpecial(t: string): boolean {
  return (
    t === "<pad>" || t === "<mask>" || t === "<2mass>" || t === "[@BOS@]" ||
    (t.startsWith("<|") && t.endsWith("|>")) ||
    (t.startsWith("<\uff5c") && t.endsWith("\uff5c>")) ||
    (t.startsWith("<unused") && t.endsWith(">"))
  );
}

/** The name PRE_BY_REGEX gives the Split regex of a tokenizer.json, if any. */
export function bpePreByRegex(tok: Json): string | undefined {
  const pre = isObject(tok) ? tok.pre_tokenizer : undefined;
  const list = isObject(pre) && Array.isArray(pre.pretokenizers) ? pre.pretokenizers : [pre];
  for (const p of list) {
    if (!isObject(p) || p.type !== "Split" || !isObject(p.pattern)) continue;
    const re = p.pattern.Regex;
    if (typeof re === "string" && Object.prototype.hasOwnProperty.call(PRE_BY_REGEX, re)) return PRE_BY_REGEX[re]!;
  }
  return undefined;
}

export interface BpePreChoice {
  readonly name: string;
  /** convert_hf_to_gguf's chkhsh, or undefined when the tokenizer could not be run here. */
  readonly hash: string | undefined;
  /** How the name was chosen, when not by a known hash. */
  readonly note?: string;
}

/**
 * tokenizer.ggml.pre for a tokenizer.json: by the check-text hash (convert_hf_to_gguf's rule),
 * else `given`, else the Split regex.
 * @throws TensorcastError UNSUPPORTED_TYPE when none of the three names it.
 */
export function bpePreName(tok: Json, given?: string): BpePreChoice {
  let hash: string | undefined;
  let why: string;
  try {
    hash = checkHash(tok).hash;
    const known = PRE_BY_HASH.get(hash);
    if (known !== undefined) return { name: known, hash };
    why = `its check-text hash ${hash} is not one convert_hf_to_gguf.py knows`;
  } catch (e) {
    if (!(e instanceof TensorcastError) || e.code !== "UNSUPPORTED_TYPE") throw e;
    why = `its tokenizer could not be run for the check-text hash (${e.message})`;
  }
  if (given !== undefined) return { name: given, hash, note: `tokenizer.ggml.pre ${given}, as given: ${why}` };
  const byRegex = bpePreByRegex(tok);
  if (byRegex !== undefined) return { name: byRegex, hash, note: `tokenizer.ggml.pre ${byRegex}, by tokenizer.json's pre-tokenizer regex: ${why}` };
  throw new TensorcastError(
    "UNSUPPORTED_TYPE",
    `tokenizer.json's pre-tokenizer cannot be named: ${why}, and its Split regex is none of those of ${[...new Set(Object.values(PRE_BY_REGEX))].join(", ")}; name it with --tokenizer-pre NAME (a name llama.cpp knows, e.g. llama-bpe, qwen2, gpt-2)`,
  );
}

export function bpeVocabEntries(
  input: SpecialVocabInput & { readonly tokenizerJson: Json },
  vocabSize: number | undefined,
  pre: { readonly given?: string; readonly notes?: string[] } = {},
): GgufMetadataEntry[] {
  const tok = input.tokenizerJson;
  const model = isObject(tok) ? tok.model : undefined;
  const vocab = isObject(model) ? model.vocab : undefined;
  if (!isObject(model) || model.type !== "BPE" || !isObject(vocab)) {
    throw new TensorcastError("UNSUPPORTED_TYPE", `tokenizer.json's model is ${JSON.stringify(isObject(model) ? model.type : model)}; convertible: a BPE model with a vocab`);
  }
  const byId = new Map<number, string>();
  for (const [t, id] of Object.entries(vocab)) if (typeof id === "number") byId.set(id, t);
  const added = new Map<number, { content: string; special: boolean }>();
  const addedList = isObject(tok) && Array.isArray(tok.added_tokens) ? tok.added_tokens : [];
  for (const a of addedList) {
    if (isObject(a) && typeof a.id === "number" && typeof a.content === "string") {
      added.set(a.id, { content: a.content, special: a.special === true });
      byId.set(a.id, a.content);
    }
  }
  let maxId = -1;
  for (const id of byId.keys()) maxId = Math.max(maxId, id);
  const n = vocabSize ?? byId.size;
  if (maxId >= n) throw new TensorcastError("INVALID_DATA", `tokenizer.json has token id ${maxId}, past config.json's vocab_size ${n}`);
  const addedContents = new Set([...added.values()].map((a) => a.content));
  const tokens: string[] = [];
  const types = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let t = byId.get(i);
    if (t === undefined) {
      tokens.push(`[PAD${i}]`);
      types[i] = TOKEN_TYPE.UNUSED;
      continue;
    }
    if (addedContents.has(t)) {
      const a = added.get(i);
      if ((a?.special ?? false) || looksSpecial(t)) types[i] = TOKEN_TYPE.CONTROL;
      else {
        t = t.replace(/\u2581/g, " ");
        types[i] = TOKEN_TYPE.USER_DEFINED;
      }
    } else types[i] = TOKEN_TYPE.NORMAL;
    tokens.push(t);
  }
  const choice = bpePreName(tok, pre.given);
  if (choice.note !== undefined) pre.notes?.push(choice.note);
  return [
    { key: "tokenizer.ggml.model", type: "string", value: "gpt2" },
    { key: "tokenizer.ggml.pre", type: "string", value: choice.name },
    { key: "tokenizer.ggml.tokens", type: "array", value: { itemType: "string", items: tokens } },
    { key: "tokenizer.ggml.token_type", type: "array", value: { itemType: "int32", items: types } },
    ...specialVocabEntries(input, { loadMerges: true }),
  ];
}
