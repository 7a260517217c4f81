/**
 * A SentencePiece vocabulary (tokenizer.model) as convert_hf_to_gguf.py's
 * _set_vocab_sentencepiece writes it: tokenizer.ggml.model "llama", pre "default", the pieces
 * with their scores and types (SentencePiece's USER_DEFINED pieces are NORMAL, as
 * SentencePieceProcessor's Is* calls leave them), vocab_size slots ("[PADi]", -10000, UNUSED past
 * the model's pieces), added_tokens.json is not read (a folder with one is refused), then
 * tokenizer_config's added_tokens_decoder, then gguf-py's SpecialVocab without merges.
 *
 * tokenizer.model is a ModelProto: field 1 repeats SentencePiece { piece = 1 (string),
 * score = 2 (float), type = 3 (enum: NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, UNUSED 5, BYTE 6) }.
 */
import { TensorcastError } from "../../errors.js";
import { PbMessage } from "../onnx/precision/pb.js";
import type { GgufMetadataEntry } from "../gguf/values.js";
import { isObject } from "./json.js";
import type { HfFolderFiles } from "./plan.js";
import { specialVocabEntries } from "./special-vocab.js";
import { looksSpecial, TOKEN_TYPE } from "./vocab-bpe.js";

export interface SentencePiece {
  readonly piece: string;
  readonly score: number;
  readonly type: number;
}

/** The pieces of a tokenizer.model. @throws TensorcastError INVALID_DATA for bytes that are not one. */
export function readSentencePieceModel(bytes: Uint8Array): SentencePiece[] {
  const model = PbMessage.parse(bytes, "SentencePieceModel");
  return model.subs(1, "SentencePiece").map((p) => {
    const score = p.all(2).at(-1);
    let s = 0;
    if (score !== undefined) {
      if (score.data.length !== 4) throw new TensorcastError("INVALID_DATA", "tokenizer.model: a piece's score is not a float");
      s = new DataView(score.data.buffer, score.data.byteOffset, 4).getFloat32(0, true);
    }
    return { piece: p.string(1), score: s, type: p.int(3, 1) };
  });
}

// SentencePieceProcessor's IsUnknown / IsControl / IsUnused / IsByte; anything else is NORMAL
function spmType(t: number): number {
  if (t === 2) return TOKEN_TYPE.UNKNOWN;
  if (t === 3) return TOKEN_TYPE.CONTROL;
  if (t === 5) return TOKEN_TYPE.UNUSED;
  if (t === 6) return TOKEN_TYPE.BYTE;
  return TOKEN_TYPE.NORMAL;
}

function slots(files: HfFolderFiles, vocabSizeOfConfig: number | undefined) {
  const pieces = readSentencePieceModel(files.tokenizerModel!);
  const n = vocabSizeOfConfig === undefined || vocabSizeOfConfig === 0 ? pieces.length : vocabSizeOfConfig;
  const tokens: string[] = [];
  const scores = new Float32Array(n).fill(-10000);
  const types = new Int32Array(n).fill(TOKEN_TYPE.UNUSED);
  for (let i = 0; i < n; i++) tokens.push(`[PAD${i}]`);
  for (let i = 0; i < Math.min(n, pieces.length); i++) {
    tokens[i] = pieces[i]!.piece;
    scores[i] = pieces[i]!.score;
    types[i] = spmType(pieces[i]!.type);
  }
  return { n, tokens, scores, types };
}

function entries(files: HfFolderFiles, v: { n: number; tokens: string[]; scores: Float32Array; types: Int32Array }): GgufMetadataEntry[] {
  return [
    { key: "tokenizer.ggml.model", type: "string", value: "llama" },
    { key: "tokenizer.ggml.pre", type: "string", value: "default" },
    { key: "tokenizer.ggml.tokens", type: "array", value: { itemType: "string", items: v.tokens } },
    { key: "tokenizer.ggml.scores", type: "array", value: { itemType: "float32", items: v.scores } },
    { key: "tokenizer.ggml.token_type", type: "array", value: { itemType: "int32", items: v.types } },
    ...specialVocabEntries(files, { loadMerges: false, nVocab: v.tokens.length }),
  ];
}

/** TextModel._set_vocab_sentencepiece. */
export function spmVocabEntries(files: HfFolderFiles, vocabSizeOfConfig: number | undefined): GgufMetadataEntry[] {
  const v = slots(files, vocabSizeOfConfig);
  const { n, tokens, scores, types } = v;
  const decoder = isObject(files.tokenizerConfig) ? files.tokenizerConfig.added_tokens_decoder : undefined;
  if (isObject(decoder)) {
    for (const [k, d] of Object.entries(decoder)) {
      const id = Number.parseInt(k, 10);
      if (!isObject(d) || typeof d.content !== "string" || !(id >= 0) || id >= n) continue;
      let token = d.content;
      if (d.special === true || looksSpecial(token)) types[id] = TOKEN_TYPE.CONTROL;
      else {
        token = token.replace(/\u2581/g, " ");
        types[id] = TOKEN_TYPE.USER_DEFINED;
      }
      scores[id] = -1000;
      tokens[id] = token;
    }
  }
  return entries(files, v);
}

/**
 * Phi3MiniModel.set_vocab: the pieces, then tokenizer_config's added_tokens_decoder and
 * tokenizer.json's added_tokens, each USER_DEFINED or (special) CONTROL at score -1000, spelled
 * as given (no look-special test, no U+2581 rewrite).
 */
export function phi3VocabEntries(files: HfFolderFiles, vocabSizeOfConfig: number | undefined): GgufMetadataEntry[] {
  const v = slots(files, vocabSizeOfConfig);
  const put = (id: number, d: { [k: string]: unknown }): void => {
    if (typeof d.content !== "string") return;
    if (!(id >= 0 && id < v.n)) throw new TensorcastError("INVALID_DATA", `Phi-3: added token ${JSON.stringify(d.content)} has id ${id}, past the vocabulary's ${v.n}`);
    v.tokens[id] = d.content;
    v.scores[id] = -1000;
    v.types[id] = d.special === true ? TOKEN_TYPE.CONTROL : TOKEN_TYPE.USER_DEFINED;
  };
  const decoder = isObject(files.tokenizerConfig) ? files.tokenizerConfig.added_tokens_decoder : undefined;
  if (isObject(decoder)) for (const [k, d] of Object.entries(decoder)) if (isObject(d)) put(Number.parseInt(k, 10), d);
  const added = isObject(files.tokenizerJson) ? files.tokenizerJson.added_tokens : undefined;
  if (Array.isArray(added)) for (const d of added) if (isObject(d)) put(Number(d.id), d);
  return entries(files, v);
}
