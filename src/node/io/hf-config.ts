/**
 * A Hugging Face config.json's data-type keys, rewritten in place. transformers loads a checkpoint
 * in the type its config names (`"torch_dtype": "float32"`, `"dtype"` since transformers 4.56), so a
 * folder converted to bfloat16 whose config still says float32 is loaded, and upcast, as float32.
 *
 * Which keys: `torch_dtype` and `dtype` whose value is a string naming a floating-point type, in
 * the top-level object and in the objects directly under a top-level key ending in `_config`
 * (text_config, vision_config, audio_config, ...: the sub-configs of multimodal models, each with
 * its own torch_dtype), except `quantization_config`, whose keys describe the quantization, not
 * the tensors' type. Only those string literals change; every other byte of the file stays as it
 * was (no re-serialization: key order, spacing, number spellings and comments-free formatting
 * are the author's).
 */
import { parseJsonFile } from "./json.js";
import { dtype, type DTypeName } from "../../index.js";

/** The keys that name the type a checkpoint is loaded in. */
const DTYPE_KEYS = new Set(["torch_dtype", "dtype"]);

/** A data-type key found in the text: its dotted path, its value, and where its string literal is. */
export interface ConfigDtypeKey {
  /** "torch_dtype", "text_config.dtype", ... */
  readonly key: string;
  readonly value: string;
  /** The string literal's [start, end) in the text, quotes included. */
  readonly start: number;
  readonly end: number;
}


/**
 * The data-type keys of the config.json `text` (see the file comment for which), in file order.
 * `text` must be valid JSON within the nesting limit (parseJsonFile); the scan is iterative, one
 * pass, no tree built.
 * @example configDtypeKeys('{"torch_dtype": "float32", "text_config": {"dtype": "float32"}}')
 * // [{ key: "torch_dtype", value: "float32", start: 16, end: 25 }, { key: "text_config.dtype", ... }]
 */
export function configDtypeKeys(text: string): ConfigDtypeKey[] {
  parseJsonFile(text, "config.json");
  const found: ConfigDtypeKey[] = [];
  // One frame per open object or array: for objects, the key being read or whose value comes next.
  const frames: { object: boolean; key?: string; wantKey: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "{" || c === "[") frames.push({ object: c === "{", wantKey: c === "{" });
    else if (c === "}" || c === "]") frames.pop();
    else if (c === ":") frames[frames.length - 1].wantKey = false;
    else if (c === ",") {
      const top = frames[frames.length - 1];
      if (top.object) top.wantKey = true;
    } else if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      end++;
      const literal = JSON.parse(text.slice(i, end)) as string;
      const top = frames[frames.length - 1];
      if (top?.object && top.wantKey) top.key = literal;
      else if (top?.object && top.key !== undefined && DTYPE_KEYS.has(top.key) && isFloatName(literal)) {
        const path = dtypeKeyPath(frames);
        if (path !== undefined) found.push({ key: path, value: literal, start: i, end });
      }
      i = end - 1;
    }
  }
  return found;
}

/** The dotted path of the key the innermost frame is at, when it is one whose value is rewritten. */
function dtypeKeyPath(frames: readonly { object: boolean; key?: string }[]): string | undefined {
  if (frames.length === 1) return frames[0].key;
  const parent = frames[0].key;
  if (frames.length === 2 && frames[0].object && parent !== undefined && parent.endsWith("_config") && parent !== "quantization_config") {
    return `${parent}.${frames[1].key}`;
  }
  return undefined;
}

/** Whether `name` names a floating-point type ("float32", "bfloat16", "half", "float8_e4m3fn", ...). */
function isFloatName(name: string): boolean {
  try {
    return dtype(name).kind === "float";
  } catch {
    return false;
  }
}

/**
 * `text` with each of `keys` set to `to` (a JSON string literal replacing the old one), and every
 * other byte as it was.
 * @example retypeConfig('{"torch_dtype": "float32"}', configDtypeKeys('{"torch_dtype": "float32"}'), "bfloat16") // '{"torch_dtype": "bfloat16"}'
 */
export function retypeConfig(text: string, keys: readonly ConfigDtypeKey[], to: DTypeName): string {
  let out = "";
  let at = 0;
  for (const k of keys) {
    out += text.slice(at, k.start) + JSON.stringify(to);
    at = k.end;
  }
  return out + text.slice(at);
}
