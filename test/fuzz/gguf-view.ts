/**
 * What a reader saw in a GGUF file, in one text form for both sides of the GGUF fuzz class:
 * tensorcast (gguf-worker.ts, from its GgufFile) and gguf.cpp (gguf-peer-worker.ts, from its
 * gguf_context), so that two views of one file compare as equal strings.
 *
 * String values are cut at their first NUL: gguf.cpp hands them out as C strings, so that is all of
 * them the peer can show. Keys and tensor names are not cut on tensorcast's side: gguf.cpp finds
 * keys by C string (gguf_find_key) and keeps a tensor's name only up to its NUL (ggml_set_name), so
 * a key or name holding a NUL is another name to llama.cpp, and the views say so.
 */
import { createHash } from "node:crypto";

export interface GgufView {
  readonly version: number;
  readonly alignment: number;
  readonly dataOffset: number;
  /** "key<TAB>type<TAB>value" per pair, in file order. */
  readonly kv: string[];
  /** "name<TAB>ggml type id<TAB>ne0,ne1,ne2,ne3<TAB>offset<TAB>bytes" per tensor, in file order. */
  readonly tensors: string[];
}

export const VALUE_TYPE_NAMES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"];
export const VALUE_TYPE_BYTES = [1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8];

const lenient = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/** A string as a C string shows it. */
export function cString(s: string): string {
  const i = s.indexOf("\0");
  return i < 0 ? s : s.slice(0, i);
}

/** Bytes (UTF-8, maybe not valid) as the readers' lenient decoding gives them. */
export function decodeLenient(b: Uint8Array): string {
  return lenient.decode(b);
}

/** A number the way both sides print it (-0 kept). */
export function numberText(v: number | bigint | boolean): string {
  if (typeof v === "boolean") return v ? "true" : "false";
  return typeof v === "number" && Object.is(v, -0) ? "-0" : String(v);
}

/** A scalar of GGUF type `type` from its little-endian bytes. */
export function scalarFromBytes(type: number, b: Uint8Array): string {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  switch (type) {
    case 0: return numberText(v.getUint8(0));
    case 1: return numberText(v.getInt8(0));
    case 2: return numberText(v.getUint16(0, true));
    case 3: return numberText(v.getInt16(0, true));
    case 4: return numberText(v.getUint32(0, true));
    case 5: return numberText(v.getInt32(0, true));
    case 6: return numberText(v.getFloat32(0, true));
    case 7: return numberText(v.getUint8(0) !== 0);
    case 10: return numberText(v.getBigUint64(0, true));
    case 11: return numberText(v.getBigInt64(0, true));
    case 12: return numberText(v.getFloat64(0, true));
    default: return `?type ${type}`;
  }
}

export function sha(b: Uint8Array | string): string {
  return createHash("sha256").update(b).digest("hex").slice(0, 24);
}

/** An array's text: item type, count, and a digest of its items (little-endian bytes, or the strings as C strings). */
export function arrayText(itemType: number, n: number, items: Uint8Array | readonly string[]): string {
  const digest = items instanceof Uint8Array ? sha(items) : sha(JSON.stringify(items.map(cString)));
  return `array<${VALUE_TYPE_NAMES[itemType] ?? itemType}>[${n}] ${digest}`;
}

export function kvText(key: string, type: number, value: string): string {
  return `${key}\t${VALUE_TYPE_NAMES[type] ?? type}\t${value}`;
}

export function tensorText(name: string, typeId: number, ne: readonly (number | bigint)[], offset: number | bigint, bytes: number | bigint): string {
  return `${name}\t${typeId}\t${ne.join(",")}\t${offset}\t${bytes}`;
}

/**
 * The first line where two views differ, or undefined. The data offset of a file without tensors
 * is not compared: gguf-py pads it to the alignment as if a data section followed, gguf.cpp does
 * not (tensorcast gives gguf-py's), and no tensor's place depends on it.
 */
export function viewDifference(a: GgufView, b: GgufView): string | undefined {
  const fields = a.tensors.length > 0 ? (["version", "alignment", "dataOffset"] as const) : (["version", "alignment"] as const);
  for (const k of fields) if (a[k] !== b[k]) return `${k}: ${a[k]} vs ${b[k]}`;
  for (const k of ["kv", "tensors"] as const) {
    if (a[k].length !== b[k].length) return `${k}: ${a[k].length} entries vs ${b[k].length}`;
    for (let i = 0; i < a[k].length; i++) if (a[k][i] !== b[k][i]) return `${k}[${i}]: ${JSON.stringify(a[k][i].slice(0, 200))} vs ${JSON.stringify(b[k][i].slice(0, 200))}`;
  }
  return undefined;
}

/** A digest of float32 values, every NaN made one (payloads are not meaningful: see src/ggml/dequantize.ts). */
export function floatDigest(f: Float32Array): string {
  const c = new Float32Array(f);
  const u = new Uint32Array(c.buffer);
  for (let i = 0; i < c.length; i++) if (c[i] !== c[i]) u[i] = 0x7fc00000;
  return sha(new Uint8Array(c.buffer));
}
