/**
 * The one way tensorcast reads a JSON file other than a safetensors header (which has its own
 * reader, src/io/safetensors/json.ts): JSON.parse behind a nesting check with the header reader's limit.
 * V8's JSON.parse itself accepts any depth, but a tree 200,000 arrays deep then overflows the
 * stack of whatever walks it (JSON.stringify of an index's metadata did, exit 70). The check is a
 * single pass over the text with a counter, no recursion.
 */
import { TensorcastError } from "../errors.js";
import { MAX_JSON_DEPTH } from "./safetensors/json.js";

const QUOTE = 0x22, BACKSLASH = 0x5c, LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d;

/**
 * Where `text` first nests arrays and objects more than `limit` deep: the index of the bracket
 * that opens level `limit + 1`, or -1 when it never does. Brackets inside strings do not count.
 * Text that is not JSON gets an answer too (JSON.parse refuses it afterwards).
 * @example firstTooDeep("[[1]]", 1) // 1
 */
export function firstTooDeep(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === LBRACE || c === LBRACKET) {
      if (++depth > limit) return i;
    } else if (c === RBRACE || c === RBRACKET) depth--;
  }
  return -1;
}

/**
 * JSON.parse of `text`, read from `file`, refusing arrays and objects nested more than
 * MAX_JSON_DEPTH (127) deep, serde_json's limit, which safetensors headers already have.
 * @example parseJsonFile('{"a": [1]}', "x.json") // { a: [1] }
 * @throws TensorcastError INVALID_DATA naming `file`: too deep, or not JSON (JSON.parse's reason).
 */
export function parseJsonFile(text: string, file: string): unknown {
  const at = firstTooDeep(text);
  if (at >= 0) {
    throw new TensorcastError(
      "INVALID_DATA",
      `${file}: arrays and objects nested more than ${MAX_JSON_DEPTH} deep (at character ${at}); the limit is serde_json's, as for a safetensors header`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new TensorcastError("INVALID_DATA", `${file}: is not valid JSON: ${(e as Error).message}`);
  }
}
