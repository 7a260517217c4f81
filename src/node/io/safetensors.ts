/**
 * safetensors headers written (the format and its reader: src/io/safetensors/header.ts, which this
 * module re-exports so Node code finds both here).
 */
import { TensorcastError } from "../../index.js";
import { shapeSize } from "../../tensor.js";
import { describe, expectInteger, expectObject } from "../../args.js";
import { isDType } from "../args.js";
import { NameIndex } from "../../io/name-index.js";
import { quoteBounded } from "../../io/safetensors/json.js";
import { bad, MAX_HEADER_LENGTH, SAFETENSORS_DTYPES, safetensorsCode } from "../../io/safetensors/header.js";
import type { TensorInfo } from "./tensors.js";

export {
  MAX_HEADER_LENGTH, SAFETENSORS_DTYPES, safetensorsCode, readHeaderLength, parseSafetensorsHeader, readSafetensorsHeader,
  type SafetensorsTensor, type SafetensorsHeader,
} from "../../io/safetensors/header.js";

/** A surrogate code unit not part of a pair (a pair matches as one astral code point). */
const LONE_SURROGATE = /\p{Cs}/u;
/** Any surrogate code unit: the quick test before LONE_SURROGATE's. */
const SURROGATE = /[\ud800-\udfff]/;

/**
 * The first 8 + N bytes of a safetensors file holding `tensors` in this order (offsets are
 * assigned back to back) and `metadata`: the length, then the JSON padded with spaces to a
 * multiple of 8 bytes, as the Rust writer pads it, so the data buffer starts 8-byte aligned.
 * @throws TensorcastError UNSUPPORTED_TYPE for a type safetensors has no code for, naming the tensor.
 */
export function encodeSafetensorsHeader(
  tensors: readonly Pick<TensorInfo, "name" | "dtype" | "shape" | "size" | "byteLength">[],
  metadata?: Readonly<Record<string, string>>,
  file = "output",
): Uint8Array {
  checkHeaderArguments(tensors, metadata, file);
  // JSON text built by hand, in this order: an object would move integer-like names ("0") first
  // and treat "__proto__" specially.
  const parts: string[] = [];
  for (const [k, v] of Object.entries(metadata ?? {})) {
    if (LONE_SURROGATE.test(k) || LONE_SURROGATE.test(v)) {
      throw bad(file, `__metadata__ ${quoteBounded(k)} has an unpaired UTF-16 surrogate, which safetensors readers refuse`);
    }
  }
  if (metadata !== undefined) parts.push(`"__metadata__":${JSON.stringify(metadata)}`);
  const names = new NameIndex();
  let offset = 0;
  for (const t of tensors) {
    const code = safetensorsCode(t.dtype);
    if (code === undefined) {
      throw bad(file, `safetensors has no dtype for ${t.dtype.name}; it stores ${Object.values(SAFETENSORS_DTYPES).join(", ")}`, t.name, "UNSUPPORTED_TYPE");
    }
    if (t.name === "__metadata__") throw bad(file, "the name __metadata__ is reserved by the format", t.name);
    if (SURROGATE.test(t.name) && LONE_SURROGATE.test(t.name)) throw bad(file, "has an unpaired UTF-16 surrogate, which safetensors readers refuse", t.name);
    if (names.find(t.name) >= 0) throw bad(file, "appears twice; safetensors names must be unique", t.name);
    names.add(t.name);
    if (t.dtype.packed && (t.size * t.dtype.bits) % 8 !== 0) {
      throw bad(file, `${t.size} elements of ${code} do not fill whole bytes, which safetensors requires`, t.name, "SHAPE_MISMATCH");
    }
    // What JSON.stringify({ dtype, shape, data_offsets }) writes, without an object per tensor.
    parts.push(`${JSON.stringify(t.name)}:{"dtype":"${code}","shape":[${t.shape.join(",")}],"data_offsets":[${offset},${offset + t.byteLength}]}`);
    offset += t.byteLength;
  }
  const json = new TextEncoder().encode(`{${parts.join(",")}}`);
  const padded = Math.ceil(json.length / 8) * 8;
  if (padded > MAX_HEADER_LENGTH) throw bad(file, `the header would be ${padded} bytes, over the ${MAX_HEADER_LENGTH}-byte limit`);
  const out = new Uint8Array(8 + padded).fill(0x20, 8 + json.length);
  new DataView(out.buffer).setUint32(0, padded, true);
  out.set(json, 8);
  return out;
}

/** encodeSafetensorsHeader's arguments, checked for JavaScript callers. */
function checkHeaderArguments(tensors: unknown, metadata: unknown, file: unknown): void {
  if (typeof file !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `encodeSafetensorsHeader's file must be a string (the name errors give), got ${describe(file)}`);
  if (!Array.isArray(tensors)) throw bad(file, `encodeSafetensorsHeader takes an array of tensors, got ${describe(tensors)}`);
  for (let i = 0; i < tensors.length; i++) {
    const t: unknown = tensors[i];
    expectObject(t, `encodeSafetensorsHeader's tensor ${i}`);
    if (typeof t.name !== "string") throw bad(file, `tensor ${i}'s name is ${describe(t.name)}, not a string`);
    const d: unknown = t.dtype;
    if (!isDType(d)) throw bad(file, `tensor ${i}'s dtype must be a DType (dtype("float32")), got ${describe(d)}`);
    const size = shapeSize(t.shape as number[]);
    if (t.size !== size) throw bad(file, `tensor ${i}'s size is ${describe(t.size)}; its shape holds ${size}`, t.name, "SHAPE_MISMATCH");
    expectInteger(t.byteLength, `tensor ${i}'s byteLength`, 0, Number.MAX_SAFE_INTEGER, "INVALID_DATA");
  }
  if (metadata === undefined) return;
  expectObject(metadata, "encodeSafetensorsHeader's metadata");
  for (const [k, v] of Object.entries(metadata)) {
    if (typeof v !== "string") throw bad(file, `__metadata__ ${quoteBounded(k)} is ${describe(v)}; safetensors metadata maps strings to strings`);
  }
}
