/**
 * A BPE tokenizer for a Hugging Face tokenizer.json, giving the ids the `tokenizers` library's
 * Tokenizer.encode(text, add_special_tokens) gives: the added tokens split out first (those not
 * `normalized` on the raw text, then the normalizer, then the normalized ones on the normalized
 * text; lstrip, rstrip and single_word as tokenizers applies them), the pre-tokenizer, the BPE
 * model (merges by rank, ignore_merges, byte_fallback, unk with fuse_unk, continuing_subword_prefix
 * and end_of_word_suffix) and the post-processor's special tokens.
 *
 * Made for what convert_hf_to_gguf needs (the ids of a check text of a few hundred characters), so
 * written for clarity over speed: no cache, merges found by a scan per step. Offsets are not kept.
 * A component type not listed in the switch statements below is refused with UNSUPPORTED_TYPE.
 */
import { TensorcastError } from "../../errors.js";
import type { Json } from "../hf-gguf/json.js";
import { isObject } from "../hf-gguf/json.js";
import { literalRegExp, onigurumaRegExp } from "./regex.js";
import { utf8Encode } from "../utf8.js";

type Obj = { [k: string]: Json };

/** A stretch of text on its way through the pipeline. */
interface Piece {
  readonly text: string;
  /** Whether it starts where the whole input starts (Metaspace's prepend_scheme "first"). */
  readonly atStart: boolean;
}

type Normalize = (s: string) => string;
type PreTokenize = (pieces: Piece[]) => Piece[];
type PostProcess = (ids: number[], addSpecial: boolean) => number[];

export interface BpeTokenizer {
  /** tokenizers' `Tokenizer.encode(text, add_special_tokens).ids`. */
  encode(text: string, addSpecialTokens?: boolean): number[];
}

function unsupported(what: string, type: Json | undefined, known: readonly string[]): never {
  throw new TensorcastError("UNSUPPORTED_TYPE", `tokenizer.json's ${what} ${JSON.stringify(type ?? null)} is not one we run (we run: ${known.join(", ")})`);
}

function bad(what: string): never {
  throw new TensorcastError("INVALID_DATA", `tokenizer.json: ${what}`);
}

const str = (v: Json | undefined, dflt: string): string => (typeof v === "string" ? v : dflt);
const bool = (v: Json | undefined, dflt: boolean): boolean => (typeof v === "boolean" ? v : dflt);

/** A Split or Replace pattern: {"String": s} or {"Regex": r}. */
function pattern(p: Json | undefined): RegExp {
  if (isObject(p) && typeof p.String === "string") return literalRegExp(p.String);
  if (isObject(p) && typeof p.Regex === "string") return onigurumaRegExp(p.Regex);
  return bad(`a pattern is ${JSON.stringify(p ?? null)}, not {"String": ...} or {"Regex": ...}`);
}

/** The non-empty matches of a global regex as [start, end] UTF-16 offsets. */
function matches(re: RegExp, s: string): [number, number][] {
  const out: [number, number][] = [];
  re.lastIndex = 0;
  for (let m = re.exec(s); m !== null; m = re.exec(s)) {
    if (m[0].length === 0) {
      // step over the empty match by a whole code point
      re.lastIndex += (s.codePointAt(re.lastIndex) ?? 0) > 0xffff ? 2 : 1;
      continue;
    }
    out.push([m.index, m.index + m[0].length]);
  }
  return out;
}

type Behavior = "Removed" | "Isolated" | "MergedWithPrevious" | "MergedWithNext" | "Contiguous";
const BEHAVIORS: readonly Behavior[] = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"];

/** tokenizers' NormalizedString::split: cut `p` at the matches, kept or joined as `behavior` says. */
function splitPiece(p: Piece, found: [number, number][], behavior: Behavior, invert: boolean): Piece[] {
  const s = p.text;
  // segments [start, end, isMatch] covering s
  const segs: [number, number, boolean][] = [];
  let at = 0;
  for (const [a, b] of found) {
    if (a > at) segs.push([at, a, invert]);
    segs.push([a, b, !invert]);
    at = b;
  }
  if (at < s.length) segs.push([at, s.length, invert]);
  const spans: [number, number][] = [];
  switch (behavior) {
    case "Removed":
      for (const [a, b, m] of segs) if (!m) spans.push([a, b]);
      break;
    case "Isolated":
      for (const [a, b] of segs) spans.push([a, b]);
      break;
    case "Contiguous":
    case "MergedWithPrevious": {
      // a match joins the span before it when that one is a match too (Contiguous) or is not (MergedWithPrevious)
      const joinsMatch = behavior === "Contiguous";
      segs.forEach(([a, b, m], i) => {
        const prev = spans[spans.length - 1];
        if (prev !== undefined && m && segs[i - 1]?.[2] === joinsMatch) prev[1] = b;
        else spans.push([a, b]);
      });
      break;
    }
    case "MergedWithNext": {
      let pending: number | undefined;
      for (const [a, b, m] of segs) {
        if (m) {
          if (pending === undefined) pending = a;
          else {
            // two matches in a row: the earlier one stands alone
            spans.push([pending, a]);
            pending = a;
          }
        } else {
          spans.push([pending ?? a, b]);
          pending = undefined;
        }
      }
      if (pending !== undefined) spans.push([pending, s.length]);
      break;
    }
  }
  return spans.filter(([a, b]) => b > a).map(([a, b]) => ({ text: s.slice(a, b), atStart: p.atStart && a === 0 }));
}

function splitAll(pieces: Piece[], re: RegExp, behavior: Behavior, invert: boolean): Piece[] {
  return pieces.flatMap((p) => splitPiece(p, matches(re, p.text), behavior, invert));
}

function behaviorOf(v: Json | undefined, dflt: Behavior): Behavior {
  if (v === undefined || v === null) return dflt;
  if (typeof v === "string" && (BEHAVIORS as readonly string[]).includes(v)) return v as Behavior;
  return unsupported("split behavior", v, BEHAVIORS);
}

// ---------------------------------------------------------------- normalizers

const NORMALIZERS = ["NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Replace", "Prepend", "Strip", "Sequence"];

function normalizerOf(n: Json | undefined): Normalize {
  if (n === undefined || n === null) return (s) => s;
  if (!isObject(n)) return bad(`the normalizer is ${JSON.stringify(n)}`);
  switch (n.type) {
    case "NFC":
    case "NFD":
    case "NFKC":
    case "NFKD": {
      const form = n.type;
      return (s) => s.normalize(form);
    }
    case "Lowercase":
      return (s) => s.toLowerCase();
    case "Replace": {
      const re = pattern(n.pattern);
      const content = str(n.content, "");
      return (s) => s.replace(re, () => content);
    }
    case "Prepend": {
      const pre = str(n.prepend, "");
      return (s) => (s.length > 0 ? pre + s : s);
    }
    case "Strip": {
      const left = bool(n.strip_left, false);
      const right = bool(n.strip_right, false);
      return (s) => {
        let t = s;
        if (left) t = t.replace(/^[\s\x85]+/u, "");
        if (right) t = t.replace(/[\s\x85]+$/u, "");
        return t;
      };
    }
    case "Sequence": {
      const list = Array.isArray(n.normalizers) ? n.normalizers.map(normalizerOf) : bad("a Sequence normalizer without normalizers");
      return (s) => list.reduce((t, f) => f(t), s);
    }
    default:
      return unsupported("normalizer", n.type, NORMALIZERS);
  }
}

// ---------------------------------------------------------------- pre-tokenizers

/** GPT-2's pattern, the one ByteLevel uses when use_regex is on. */
const GPT2_REGEX = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/** GPT-2's bytes_to_unicode: each byte as a printable character. */
export const BYTE_CHARS: readonly string[] = (() => {
  const out: string[] = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    out[b] = String.fromCodePoint(printable ? b : 256 + extra++);
  }
  return out;
})();

function byteLevelChars(s: string): string {
  let out = "";
  for (const b of utf8Encode(s)) out += BYTE_CHARS[b]!;
  return out;
}

const PRE_TOKENIZERS = ["Split", "ByteLevel", "Digits", "Metaspace", "Whitespace", "WhitespaceSplit", "Punctuation", "Sequence"];

function preTokenizerOf(p: Json | undefined): PreTokenize {
  if (p === undefined || p === null) return (x) => x;
  if (!isObject(p)) return bad(`the pre-tokenizer is ${JSON.stringify(p)}`);
  switch (p.type) {
    case "Split": {
      const re = pattern(p.pattern);
      const behavior = behaviorOf(p.behavior, "Isolated");
      const invert = bool(p.invert, false);
      return (pieces) => splitAll(pieces, re, behavior, invert);
    }
    case "ByteLevel": {
      const prefix = bool(p.add_prefix_space, true);
      const re = bool(p.use_regex, true) ? onigurumaRegExp(GPT2_REGEX) : undefined;
      return (pieces) => {
        const spaced = pieces.map((x) => (prefix && !x.text.startsWith(" ") ? { text: " " + x.text, atStart: x.atStart } : x));
        const split = re === undefined ? spaced : splitAll(spaced, re, "Isolated", false);
        return split.map((x) => ({ text: byteLevelChars(x.text), atStart: x.atStart }));
      };
    }
    case "Digits": {
      // Rust's char::is_numeric: the N categories
      const individual = bool(p.individual_digits, false);
      return (pieces) => splitAll(pieces, /\p{N}/gu, individual ? "Isolated" : "Contiguous", false);
    }
    case "Metaspace": {
      const rep = str(p.replacement, "\u2581");
      const scheme = typeof p.prepend_scheme === "string" ? p.prepend_scheme : bool(p.add_prefix_space, true) ? "always" : "never";
      if (!["always", "first", "never"].includes(scheme)) unsupported("Metaspace prepend_scheme", scheme, ["always", "first", "never"]);
      const split = bool(p.split, true);
      const repRe = literalRegExp(rep);
      return (pieces) => {
        const out = pieces.map((x) => {
          let t = x.text.replace(/ /g, rep);
          if (!t.startsWith(rep) && (scheme === "always" || (scheme === "first" && x.atStart))) t = rep + t;
          return { text: t, atStart: x.atStart };
        });
        return split ? splitAll(out, repRe, "MergedWithNext", false) : out;
      };
    }
    case "Whitespace":
      return (pieces) => splitAll(pieces, /[\p{L}\p{M}\p{N}\p{Pc}]+|[^\p{L}\p{M}\p{N}\p{Pc}\s]+/gu, "Removed", true);
    case "WhitespaceSplit":
      return (pieces) => splitAll(pieces, /[\s\x85]+/gu, "Removed", false);
    case "Punctuation": {
      // Rust's is_ascii_punctuation or a Unicode punctuation category
      const behavior = behaviorOf(p.behavior, "Isolated");
      return (pieces) => splitAll(pieces, /[\p{P}!-/:-@[-`{-~]/gu, behavior, false);
    }
    case "Sequence": {
      const list = Array.isArray(p.pretokenizers) ? p.pretokenizers.map(preTokenizerOf) : bad("a Sequence pre-tokenizer without pretokenizers");
      return (pieces) => list.reduce((x, f) => f(x), pieces);
    }
    default:
      return unsupported("pre-tokenizer", p.type, PRE_TOKENIZERS);
  }
}

// ---------------------------------------------------------------- the BPE model

interface BpeModel {
  tokenize(word: string): number[];
}

function bpeModelOf(m: Json | undefined): BpeModel {
  if (!isObject(m) || m.type !== "BPE") return unsupported("model", isObject(m) ? m.type : m, ["BPE"]);
  if (!isObject(m.vocab)) bad("the BPE model has no vocab");
  const vocab = new Map<string, number>();
  for (const [t, id] of Object.entries(m.vocab)) if (typeof id === "number") vocab.set(t, id);
  const prefix = str(m.continuing_subword_prefix, "");
  const suffix = str(m.end_of_word_suffix, "");
  const unk = typeof m.unk_token === "string" ? vocab.get(m.unk_token) : undefined;
  const fuseUnk = bool(m.fuse_unk, false);
  const byteFallback = bool(m.byte_fallback, false);
  const ignoreMerges = bool(m.ignore_merges, false);
  // (left id, right id) -> rank and merged id, as tokenizers keys its merge table
  const merges = new Map<number, { rank: number; id: number }>();
  // a pair as one number: ids stay far below 2^26
  const pairKey = (a: number, b: number): number => a * 67108864 + b;
  const list = Array.isArray(m.merges) ? m.merges : [];
  list.forEach((entry, rank) => {
    let a: string, b: string;
    if (typeof entry === "string") {
      const sp = entry.indexOf(" ");
      if (sp < 0) bad(`merge ${JSON.stringify(entry)} is not "a b"`);
      [a, b] = [entry.slice(0, sp), entry.slice(sp + 1)];
    } else if (Array.isArray(entry) && entry.length === 2 && typeof entry[0] === "string" && typeof entry[1] === "string") [a, b] = [entry[0], entry[1]];
    else bad(`merge ${JSON.stringify(entry)} is neither "a b" nor [a, b]`);
    const ia = vocab.get(a);
    const ib = vocab.get(b);
    const merged = a + (prefix.length > 0 && b.startsWith(prefix) ? b.slice(prefix.length) : b);
    const id = vocab.get(merged);
    if (ia === undefined || ib === undefined || id === undefined) bad(`merge ${JSON.stringify([a, b])} names a token the vocab lacks`);
    const key = pairKey(ia, ib);
    if (!merges.has(key)) merges.set(key, { rank, id });
  });
  const byteIds: (number | undefined)[] = [];
  for (let b = 0; b < 256; b++) byteIds.push(vocab.get(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`));

  return {
    tokenize(word: string): number[] {
      if (ignoreMerges) {
        const whole = vocab.get(word);
        if (whole !== undefined) return [whole];
      }
      const chars = [...word];
      const syms: number[] = [];
      let lastUnk = false;
      chars.forEach((ch, i) => {
        const s = (i > 0 ? prefix : "") + ch + (i === chars.length - 1 ? suffix : "");
        const id = vocab.get(s);
        if (id !== undefined) {
          syms.push(id);
          lastUnk = false;
          return;
        }
        if (byteFallback) {
          const ids = [...utf8Encode(ch)].map((b) => byteIds[b]);
          if (ids.every((x) => x !== undefined)) {
            syms.push(...(ids as number[]));
            lastUnk = false;
            return;
          }
        }
        if (unk !== undefined) {
          if (!(fuseUnk && lastUnk)) syms.push(unk);
          lastUnk = true;
        }
      });
      for (;;) {
        let best: { rank: number; id: number } | undefined;
        let at = -1;
        for (let i = 0; i + 1 < syms.length; i++) {
          const mg = merges.get(pairKey(syms[i]!, syms[i + 1]!));
          if (mg !== undefined && (best === undefined || mg.rank < best.rank)) {
            best = mg;
            at = i;
          }
        }
        if (best === undefined) return syms;
        syms.splice(at, 2, best.id);
      }
    },
  };
}

// ---------------------------------------------------------------- post-processors

const POST_PROCESSORS = ["TemplateProcessing", "ByteLevel", "RobertaProcessing", "BertProcessing", "Sequence"];

function postProcessorOf(p: Json | undefined): PostProcess {
  if (p === undefined || p === null) return (ids) => ids;
  if (!isObject(p)) return bad(`the post-processor is ${JSON.stringify(p)}`);
  switch (p.type) {
    case "ByteLevel":
      return (ids) => ids;
    case "TemplateProcessing": {
      const special = isObject(p.special_tokens) ? p.special_tokens : {};
      const single = Array.isArray(p.single) ? p.single : bad("a TemplateProcessing without single");
      const parts: (number[] | "A")[] = single.map((item) => {
        if (isObject(item) && isObject(item.Sequence)) {
          if (item.Sequence.id !== "A") bad(`TemplateProcessing's single template has sequence ${JSON.stringify(item.Sequence.id)}`);
          return "A";
        }
        if (isObject(item) && isObject(item.SpecialToken) && typeof item.SpecialToken.id === "string") {
          const t = special[item.SpecialToken.id];
          if (!isObject(t) || !Array.isArray(t.ids) || !t.ids.every((x) => typeof x === "number")) bad(`TemplateProcessing's special token ${JSON.stringify(item.SpecialToken.id)} has no ids`);
          return t.ids as number[];
        }
        return bad(`TemplateProcessing item ${JSON.stringify(item)}`);
      });
      return (ids, add) => (add ? parts.flatMap((x) => (x === "A" ? ids : x)) : ids);
    }
    case "RobertaProcessing":
    case "BertProcessing": {
      const id = (v: Json | undefined): number => (Array.isArray(v) && typeof v[1] === "number" ? v[1] : bad(`${String(p.type)} cls/sep ${JSON.stringify(v ?? null)}`));
      const cls = id(p.cls);
      const sep = id(p.sep);
      return (ids, add) => (add ? [cls, ...ids, sep] : ids);
    }
    case "Sequence": {
      const list = Array.isArray(p.processors) ? p.processors.map(postProcessorOf) : bad("a Sequence post-processor without processors");
      return (ids, add) => list.reduce((x, f) => f(x, add), ids);
    }
    default:
      return unsupported("post-processor", p.type, POST_PROCESSORS);
  }
}

// ---------------------------------------------------------------- added tokens

interface AddedToken {
  readonly id: number;
  readonly content: string;
  readonly singleWord: boolean;
  readonly lstrip: boolean;
  readonly rstrip: boolean;
}

/** An added token found in a piece, or a stretch to tokenize. */
type Segment = { readonly id: number } | { readonly text: string; readonly atStart: boolean };

const isWordChar = (c: string | undefined): boolean => c !== undefined && /[\p{L}\p{N}_]/u.test(c);
const isSpace = (c: string | undefined): boolean => c !== undefined && /[\s\x85]/u.test(c);

/**
 * tokenizers' AddedVocabulary::split_with_indices: the leftmost-longest matches of the added
 * tokens, those failing single_word dropped, lstrip and rstrip taking the whitespace beside them.
 */
function splitAdded(p: Piece, tokens: readonly AddedToken[]): Segment[] {
  if (tokens.length === 0 || p.text.length === 0) return [p];
  const s = p.text;
  const found: [number, number, number][] = [];
  let i = 0;
  while (i < s.length) {
    let best: AddedToken | undefined;
    for (const t of tokens) if (s.startsWith(t.content, i) && (best === undefined || t.content.length > best.content.length)) best = t;
    if (best === undefined) {
      i++;
      continue;
    }
    let a = i;
    let b = i + best.content.length;
    i = b;
    if (best.singleWord && (isWordChar(s[a - 1]) || isWordChar(s[b]))) continue;
    const floor = found.length > 0 ? found[found.length - 1]![1] : 0;
    if (best.lstrip) while (a > floor && isSpace(s[a - 1])) a--;
    if (best.rstrip) while (b < s.length && isSpace(s[b])) b++;
    i = b;
    found.push([a, b, best.id]);
  }
  const out: Segment[] = [];
  let at = 0;
  for (const [a, b, id] of found) {
    if (a > at) out.push({ text: s.slice(at, a), atStart: p.atStart && at === 0 });
    out.push({ id });
    at = b;
  }
  if (at < s.length) out.push({ text: s.slice(at), atStart: p.atStart && at === 0 });
  return out;
}

/** The tokenizer a tokenizer.json describes. */
export function bpeTokenizerFromJson(tok: Json): BpeTokenizer {
  if (!isObject(tok)) bad("not a JSON object");
  const normalize = normalizerOf(tok.normalizer);
  const preTokenize = preTokenizerOf(tok.pre_tokenizer);
  const model = bpeModelOf(tok.model);
  const post = postProcessorOf(tok.post_processor);
  const raw: AddedToken[] = [];
  const normalized: AddedToken[] = [];
  for (const a of Array.isArray(tok.added_tokens) ? tok.added_tokens : []) {
    if (!isObject(a) || typeof a.id !== "number" || typeof a.content !== "string" || a.content.length === 0) continue;
    const t = { id: a.id, content: a.content, singleWord: bool(a.single_word, false), lstrip: bool(a.lstrip, false), rstrip: bool(a.rstrip, false) };
    // tokenizers matches a normalized token against the normalized text, in its normalized spelling
    if (bool(a.normalized, !bool(a.special, false))) normalized.push({ ...t, content: normalize(a.content) });
    else raw.push(t);
  }
  const nonEmpty = normalized.filter((t) => t.content.length > 0);
  return {
    encode(text: string, addSpecialTokens = true): number[] {
      const ids: number[] = [];
      for (const seg of splitAdded({ text, atStart: true }, raw)) {
        if ("id" in seg) {
          ids.push(seg.id);
          continue;
        }
        const norm = { text: normalize(seg.text), atStart: seg.atStart };
        for (const inner of splitAdded(norm, nonEmpty)) {
          if ("id" in inner) ids.push(inner.id);
          // tokenizers pre-tokenizes no empty stretch (no prefix space or ▁ for one)
          else if (inner.text.length > 0) for (const word of preTokenize([inner])) ids.push(...model.tokenize(word.text));
        }
      }
      return post(ids, addSpecialTokens);
    },
  };
}
