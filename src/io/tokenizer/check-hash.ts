import type { Json } from "../hf-gguf/json.js";
import { bpeTokenizerFromJson } from "./bpe.js";
import { CHECK_TEXT } from "./pre-hashes.js";
import { sha256Hex } from "./sha256.js";
import { utf8Encode } from "../utf8.js";

/**
 * convert_hf_to_gguf.py's chkhsh for a tokenizer.json: the SHA-256 of Python's str() of the id
 * list encode(CHECK_TEXT) gives with the special tokens added ("[1, 2, 3]").
 */
export function checkHash(tokenizerJson: Json): { readonly ids: number[]; readonly hash: string } {
  const ids = bpeTokenizerFromJson(tokenizerJson).encode(CHECK_TEXT, true);
  return { ids, hash: sha256Hex(utf8Encode(`[${ids.join(", ")}]`)) };
}
