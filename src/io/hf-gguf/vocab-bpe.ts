/**
 * A byte-level BPE vocabulary (tokenizer.json) as convert_hf_to_gguf.py's _set_vocab_gpt2 writes
 * it: every id below config.json's vocab_size in order ("[PADi]", UNUSED, for an id no token
 * has), added tokens CONTROL when special or special-looking and USER_DEFINED otherwise, then
 * gguf-py's SpecialVocab with merges.
 *
 * tokenizer.ggml.pre: convert_hf_to_gguf names the pre-tokenizer by the SHA-256 of the ids its
 * tokenizer gives for a check text, which needs a tokenizer run; here it is named by the Split
 * regex tokenizer.json carries instead (PRE_BY_REGEX), which is what that hash stands for. A
 * regex not in the table is refused, as convert_hf_to_gguf refuses an unknown hash.
 *
 * Not done: convert_hf_to_gguf re-spells an added token whose `normalized` is false as the
 * tokenizer decodes its encoding; the spelling is kept here (the same for the usual `<|...|>`).
 */
import { TensorcastError } from "../../errors.js";
import type { GgufMetadataEntry } from "../gguf/values.js";
import { isObject, type Json } from "./json.js";
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

/** tokenizer.ggml.pre for a tokenizer.json, by its Split regex. */
export function bpePreName(tok: Json): string {
  const pre = isObject(tok) ? tok.pre_tokenizer : undefined;
  const list = isObject(pre) && Array.isArray(pre.pretokenizers) ? pre.pretokenizers : [pre];
  for (const p of list) {
    if (!isObject(p) || p.type !== "Split" || !isObject(p.pattern)) continue;
    const re = p.pattern.Regex;
    if (typeof re === "string" && Object.prototype.hasOwnProperty.call(PRE_BY_REGEX, re)) return PRE_BY_REGEX[re]!;
  }
  throw new TensorcastError(
    "UNSUPPORTED_TYPE",
    `tokenizer.json's pre-tokenizer is not one we can name (convertible: the Split regexes of ${[...new Set(Object.values(PRE_BY_REGEX))].join(", ")})`,
  );
}

export function bpeVocabEntries(input: SpecialVocabInput & { readonly tokenizerJson: Json }, vocabSize: number | undefined): GgufMetadataEntry[] {
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
  return [
    { key: "tokenizer.ggml.model", type: "string", value: "gpt2" },
    { key: "tokenizer.ggml.pre", type: "string", value: bpePreName(tok) },
    { key: "tokenizer.ggml.tokens", type: "array", value: { itemType: "string", items: tokens } },
    { key: "tokenizer.ggml.token_type", type: "array", value: { itemType: "int32", items: types } },
    ...specialVocabEntries(input, { loadMerges: true }),
  ];
}
