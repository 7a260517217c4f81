/**
 * The tokenizer keys gguf-py's SpecialVocab adds after the vocabulary: merges, special token ids,
 * add_bos/add_eos/add_sep, the chat template and the normalizer flags, read from tokenizer.json,
 * tokenizer_config.json, chat_template.jinja / chat_template.json and config.json with its rules
 * (first id found wins, tokenizer_config before config.json; TemplateProcessing read crudely,
 * as it reads it).
 */
import type { GgufMetadataEntry } from "../gguf/values.js";
import { isObject, type Json } from "./json.js";

export interface SpecialVocabInput {
  readonly tokenizerJson?: Json;
  readonly tokenizerConfig?: Json;
  readonly config: Json;
  readonly chatTemplateJinja?: string;
  readonly chatTemplateJson?: Json;
  /** Extra templates (additional_chat_templates/NAME.jinja), sorted as the folder lists them. */
  readonly additionalTemplates?: readonly { readonly name: string; readonly template: string }[];
}

export interface SpecialVocabOptions {
  readonly loadMerges: boolean;
  /** Ids at or past this are dropped (SentencePiece vocabularies pass their size). */
  readonly nVocab?: number;
  readonly types?: readonly string[];
}

const DEFAULT_TYPES = ["bos", "eos", "unk", "sep", "pad", "cls", "mask"];

// gguf-py's add_{typ}_token_id: cls has no key
const ID_KEYS: Readonly<Record<string, string>> = {
  bos: "tokenizer.ggml.bos_token_id", eos: "tokenizer.ggml.eos_token_id", unk: "tokenizer.ggml.unknown_token_id",
  sep: "tokenizer.ggml.seperator_token_id", pad: "tokenizer.ggml.padding_token_id", mask: "tokenizer.ggml.mask_token_id",
  eot: "tokenizer.ggml.eot_token_id", eom: "tokenizer.ggml.eom_token_id",
};
const ADD_KEYS: Readonly<Record<string, string>> = {
  bos: "tokenizer.ggml.add_bos_token", eos: "tokenizer.ggml.add_eos_token", sep: "tokenizer.ggml.add_sep_token",
};

const get = (o: Json | undefined, k: string): Json | undefined => (isObject(o) ? o[k] : undefined);
const specialTokenId = (entry: Json | undefined): Json | undefined => get(get(entry, "SpecialToken"), "id");
const truthy = (v: Json | undefined): boolean =>
  v !== undefined && v !== null && v !== false && v !== 0 && v !== "" && !(Array.isArray(v) && v.length === 0) && !(isObject(v) && Object.keys(v).length === 0);

/** Python's isinstance(x, int) for a JSON value (bools included, as Python counts them). */
const isInt = (v: Json | undefined): v is number | boolean => (typeof v === "number" && Number.isInteger(v)) || typeof v === "boolean";

export function specialVocabEntries(input: SpecialVocabInput, opts: SpecialVocabOptions): GgufMetadataEntry[] {
  let types = [...(opts.types ?? DEFAULT_TYPES)];
  const ids = new Map<string, number>();
  const add = new Map<string, boolean>();
  let merges: string[] = [];
  let chatTemplate: Json | undefined;
  let lowercase: boolean | undefined;
  let stripAccents: boolean | undefined;

  const setId = (typ: string, tid: Json | undefined): void => {
    if (!isInt(tid)) return;
    const id = Number(tid);
    if (id < 0) throw new RangeError(`invalid value for special token type ${typ}: ${id}`);
    if (opts.nVocab === undefined || id < opts.nVocab) {
      if (!ids.has(typ)) ids.set(typ, id);
    }
  };
  const parseNormalizer = (n: Json): void => {
    const t = get(n, "type");
    if (t === "Lowercase") lowercase = true;
    else if (t === "StripAccents") stripAccents = true;
    else if (t === "BertNormalizer") {
      const l = get(n, "lowercase");
      const s = get(n, "strip_accents");
      if (isObject(n) && "lowercase" in n) lowercase = l as boolean;
      if (isObject(n) && "strip_accents" in n) stripAccents = s as boolean;
    } else if (t === "Sequence") for (const m of (get(n, "normalizers") as Json[] | undefined) ?? []) parseNormalizer(m);
  };

  const tok = input.tokenizerJson;
  let addedTokens: Json[] = [];
  if (tok !== undefined) {
    if (opts.loadMerges) {
      const m = get(get(tok, "model"), "merges");
      if (Array.isArray(m) && m.length > 0) {
        if (typeof m[0] === "string") merges = m as string[];
        else if (Array.isArray(m[0]) && m[0].length === 2 && typeof m[0][0] === "string") {
          // pairs (transformers 4.45+): a space inside a part is written as U+0120, as gguf-py writes it
          merges = (m as string[][]).map((pair) => pair.map((part) => part.replace(/ /g, "\u0120")).join(" "));
        } else throw new RangeError("Unknown tokenizer merges format");
      }
    }
    const norm = get(tok, "normalizer");
    if (truthy(norm)) parseNormalizer(norm!);
    addedTokens = (get(tok, "added_tokens") as Json[] | undefined) ?? [];
  }
  // a copy: gguf-py writes its findings into the parsed tokenizer_config
  const tc: Record<string, Json> | undefined = isObject(input.tokenizerConfig) ? { ...input.tokenizerConfig } : undefined;
  const tcTruthy = tc !== undefined && Object.keys(tc).length > 0;
  if (truthy(tok)) {
    let bos = tc?.bos_token;
    let cls = tc?.cls_token;
    let eos = tc?.eos_token;
    let sep = tc?.sep_token;
    if (!truthy(bos) && truthy(cls) && tcTruthy) tc.bos_token = bos = cls!;
    if (!truthy(eos) && truthy(sep) && tcTruthy) tc.eos_token = eos = sep!;
    const post = get(tok, "post_processor");
    if (truthy(post)) {
      const procs = (get(post, "processors") as Json[] | undefined) ?? [post!];
      for (const p of procs) {
        const ptype = get(p, "type");
        if (ptype === "RobertaProcessing") {
          add.set("bos", true);
          add.set("eos", true);
          add.set("sep", true);
          if (!truthy(cls) && tcTruthy) {
            cls = (get(p, "cls") as Json[] | undefined)?.[0] ?? bos;
            tc.cls_token = cls ?? null;
          }
          if (!truthy(sep) && tcTruthy) {
            sep = (get(p, "sep") as Json[] | undefined)?.[0] ?? eos;
            tc.sep_token = sep ?? null;
          }
          continue;
        }
        if (ptype !== "TemplateProcessing") continue;
        const single = (get(p, "single") as Json[] | undefined) ?? [];
        let pair = (get(p, "pair") as Json[] | undefined) ?? [];
        let first: Json | undefined;
        let last: Json | undefined;
        if (single.length > 1) {
          first = specialTokenId(single[0]);
          if (truthy(first)) {
            if (!tcTruthy) bos = first;
            else if (first !== bos && first !== cls) {
              if (!truthy(bos)) tc.bos_token = bos = first!;
              if (!truthy(cls)) tc.cls_token = cls = first!;
            }
            add.set("bos", first === bos || first === cls);
          }
          last = specialTokenId(single[single.length - 1]);
          if (truthy(last)) {
            if (!tcTruthy) eos = last;
            else if (last !== eos) {
              if (!types.includes("eot")) {
                types = [...types, "eot"];
                tc.eot_token = eos ?? null;
              } else if (!types.includes("eom")) {
                types = [...types, "eom"];
                tc.eom_token = eos ?? null;
              }
              tc.eos_token = eos = last!;
            }
            add.set("eos", last === eos);
          }
        }
        if (pair.length > 0) {
          const start = truthy(first) && specialTokenId(pair[0]) === first ? 1 : 0;
          const stop = truthy(last) && specialTokenId(pair[pair.length - 1]) === last ? pair.length - 1 : pair.length;
          pair = pair.slice(start, Math.max(start, stop));
          if (pair.length > 0) {
            const a = get(get(pair[0], "Sequence"), "id");
            const b = get(get(pair[pair.length - 1], "Sequence"), "id");
            const middle = pair.slice(1, -1);
            if (a === "A" && b === "B" && middle.length > 0) {
              let addSep = false;
              const e0 = specialTokenId(middle[0]);
              if (truthy(e0) && (e0 === sep || e0 === eos) && !truthy(last)) addSep = true;
              if (middle.length === 2) {
                const e1 = specialTokenId(middle[1]);
                if (truthy(e1) && (e1 === sep || e1 === eos)) addSep = true;
              }
              add.set("sep", addSep);
              if (addSep && !truthy(sep) && tcTruthy) tc.sep_token = eos ?? null;
            }
          }
        }
      }
    }
  }
  if (tcTruthy) {
    let alt: Json | undefined;
    if (input.chatTemplateJinja !== undefined) {
      alt = input.chatTemplateJinja;
      if (input.additionalTemplates !== undefined && input.additionalTemplates.length > 0) {
        alt = [{ name: "default", template: input.chatTemplateJinja }, ...input.additionalTemplates.map((t) => ({ name: t.name, template: t.template }))];
      }
    } else if (input.chatTemplateJson !== undefined) alt = get(input.chatTemplateJson, "chat_template");
    const ct = "chat_template" in tc ? tc.chat_template : alt;
    if (ct === undefined || ct === null || typeof ct === "string" || Array.isArray(ct)) chatTemplate = ct ?? undefined;
    for (const typ of types) {
      const entry = tc[`add_${typ}_token`];
      if (typeof entry === "boolean") add.set(typ, entry);
      const e = tc[`${typ}_token`];
      const content = typeof e === "string" ? e : isObject(e) && typeof e.content === "string" ? e.content : undefined;
      if (content === undefined) continue;
      const hit = addedTokens.find((t) => get(t, "content") === content);
      setId(typ, hit === undefined ? undefined : get(hit, "id"));
    }
  }
  if (isObject(input.config)) {
    for (const typ of types) {
      let tid: Json | undefined = input.config[`${typ}_token_id`];
      if ((tid === undefined || tid === null) && "text_config" in input.config) tid = get(input.config.text_config, `${typ}_token_id`);
      setId(typ, tid);
    }
  }

  const out: GgufMetadataEntry[] = [];
  if (merges.length > 0) out.push({ key: "tokenizer.ggml.merges", type: "array", value: { itemType: "string", items: merges } });
  for (const [typ, id] of ids) {
    const key = ID_KEYS[typ];
    if (key !== undefined) out.push({ key, type: "uint32", value: id });
  }
  for (const [typ, v] of add) {
    const key = ADD_KEYS[typ];
    if (key !== undefined) out.push({ key, type: "bool", value: v });
  }
  if (typeof chatTemplate === "string") out.push({ key: "tokenizer.chat_template", type: "string", value: chatTemplate });
  else if (Array.isArray(chatTemplate)) out.push(...chatTemplates(chatTemplate));
  if (lowercase !== undefined) out.push({ key: "tokenizer.ggml.normalizer.lowercase", type: "bool", value: lowercase });
  if (stripAccents !== undefined) out.push({ key: "tokenizer.ggml.normalizer.strip_accents", type: "bool", value: stripAccents });
  return out;
}

/** gguf-py's add_chat_template for a list of named templates: the default as tokenizer.chat_template, the others by name, then their names. */
function chatTemplates(list: readonly Json[]): GgufMetadataEntry[] {
  const out: GgufMetadataEntry[] = [];
  const names: string[] = [];
  let dflt: string | undefined;
  for (const t of list) {
    const name = get(t, "name");
    const template = get(t, "template");
    if (typeof name !== "string" || typeof template !== "string") continue;
    const clean = name.replace(/[^A-Za-z0-9_]/g, "_");
    if (clean === "default") dflt = template;
    else {
      names.push(clean);
      out.push({ key: `tokenizer.chat_template.${clean}`, type: "string", value: template });
    }
  }
  if (names.length > 0) out.push({ key: "tokenizer.chat_templates", type: "array", value: { itemType: "string", items: names } });
  if (dflt !== undefined) out.push({ key: "tokenizer.chat_template", type: "string", value: dflt });
  return out;
}
