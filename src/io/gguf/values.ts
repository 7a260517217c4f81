/**
 * GGUF metadata: the key-value pairs after the header, each a typed scalar, a string or an array
 * (of any type, arrays included: gguf-py writes a list of lists as an array whose items are
 * arrays, each with its own item type and count). Numeric arrays are kept as typed arrays, so
 * a tokenizer's million scores cost what the file spends on them, and bool arrays as bytes 0 / 1.
 *
 * Every count is checked against the bytes left in the file before anything is allocated for
 * it (gguf.cpp's rule: n items of s bytes each need n * s bytes), so a header claiming 2^60
 * items of a 1 KiB file is refused at once.
 */
import { ggufError, type GgufCursor } from "./cursor.js";

/** GGUF's value types by id (enum gguf_type). */
export const GGUF_VALUE_TYPES = [
  "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64",
] as const;

export type GgufValueType = (typeof GGUF_VALUE_TYPES)[number];

/** gguf.cpp's GGUF_MAX_ARRAY_ELEMENTS (also gguf-py's): an array of more than 2^30 items is refused. */
export const GGUF_MAX_ARRAY_ELEMENTS = 1024 * 1024 * 1024;

/**
 * How deep arrays of arrays may nest (gguf.cpp reads none; gguf-py recurses until Python's
 * stack limit). Each level costs 12 bytes of file, so without a limit a small file could
 * exhaust the reader's stack.
 */
export const GGUF_MAX_ARRAY_DEPTH = 64;

/** Bytes of one item of each fixed-size type; strings take at least their 8-byte length, arrays 12 bytes (type and count). */
const ITEM_BYTES: Readonly<Record<GgufValueType, number>> = {
  uint8: 1, int8: 1, uint16: 2, int16: 2, uint32: 4, int32: 4, float32: 4, bool: 1, string: 8, array: 12, uint64: 8, int64: 8, float64: 8,
};

export type GgufNumbers =
  | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Int32Array | Float32Array | Float64Array | BigUint64Array | BigInt64Array;

/** An array value: its items' type and the items (bool arrays as a Uint8Array of 0 and 1). */
export interface GgufArray {
  readonly itemType: GgufValueType;
  readonly items: GgufNumbers | readonly string[] | readonly GgufArray[];
}

/** A metadata value: uint64 / int64 as bigint, other numbers as number, bool, string, or an array. */
export type GgufValue = number | bigint | boolean | string | GgufArray;

export interface GgufMetadataEntry {
  readonly key: string;
  readonly type: GgufValueType;
  readonly value: GgufValue;
}

function typeOf(c: GgufCursor, id: number, where: string): GgufValueType {
  const t = GGUF_VALUE_TYPES[id];
  if (t === undefined) throw ggufError(c.file, `${where} has value type ${id}, not a GGUF type (0..12: ${GGUF_VALUE_TYPES.join(", ")})`);
  return t;
}

async function scalar(c: GgufCursor, t: Exclude<GgufValueType, "array">, where: string): Promise<GgufValue> {
  if (t === "string") return c.string(where, false);
  await c.need(ITEM_BYTES[t], where);
  switch (t) {
    case "uint8": return c.u8();
    case "int8": return c.i8();
    case "uint16": return c.u16();
    case "int16": return c.i16();
    case "uint32": return c.u32();
    case "int32": return c.i32();
    case "float32": return c.f32();
    case "bool": return c.u8() !== 0;
    case "uint64": return c.u64();
    case "int64": return c.i64();
    case "float64": return c.f64();
  }
}

const ARRAY_OF: Partial<Record<GgufValueType, new (n: number) => GgufNumbers>> = {
  uint8: Uint8Array, int8: Int8Array, uint16: Uint16Array, int16: Int16Array, uint32: Uint32Array, int32: Int32Array,
  float32: Float32Array, bool: Uint8Array, uint64: BigUint64Array, int64: BigInt64Array, float64: Float64Array,
};

/** Reverses each `size`-byte item of `b` in place (a big-endian file's numbers). */
function swap(b: Uint8Array, size: number): void {
  for (let i = 0; i < b.length; i += size) {
    for (let x = i, y = i + size - 1; x < y; x++, y--) {
      const v = b[x];
      b[x] = b[y];
      b[y] = v;
    }
  }
}

/** An array's type and count, then its items. */
async function array(c: GgufCursor, where: string, depth: number): Promise<GgufArray> {
  if (depth > GGUF_MAX_ARRAY_DEPTH) throw ggufError(c.file, `${where} nests arrays ${depth} deep, past the limit of ${GGUF_MAX_ARRAY_DEPTH}`);
  await c.need(12, `${where}'s item type and count`);
  const at = c.pos;
  const itemType = typeOf(c, c.u32(), where);
  const count = c.u64();
  if (count > BigInt(GGUF_MAX_ARRAY_ELEMENTS)) throw ggufError(c.file, `${where} at byte ${at} has ${count} items, over the limit of ${GGUF_MAX_ARRAY_ELEMENTS} (2^30)`);
  const n = Number(count);
  if (n * ITEM_BYTES[itemType] > c.remaining) {
    throw ggufError(c.file, `${where} at byte ${at} has ${n} ${itemType} items, which need at least ${n * ITEM_BYTES[itemType]} bytes, past the end of the file (${c.remaining} bytes left)`);
  }
  if (itemType === "string") {
    const items = new Array<string>(n);
    for (let i = 0; i < n; i++) items[i] = await c.string(`${where}[${i}]`, false);
    return { itemType, items };
  }
  if (itemType === "array") {
    const items = new Array<GgufArray>(n);
    for (let i = 0; i < n; i++) items[i] = await array(c, `${where}[${i}]`, depth + 1);
    return { itemType, items };
  }
  const size = ITEM_BYTES[itemType];
  const raw = await c.bytes(n * size, where);
  // Copied into an array of its own: `raw` may be a view at an odd offset of a larger buffer.
  const own = new Uint8Array(n * size);
  own.set(raw);
  if (!c.littleEndian && size > 1) swap(own, size);
  const Typed = ARRAY_OF[itemType]!;
  const items = n === 0 ? new Typed(0) : new (Typed as unknown as new (b: ArrayBuffer) => GgufNumbers)(own.buffer);
  if (itemType === "bool") for (let i = 0; i < n; i++) (items as Uint8Array)[i] = own[i] !== 0 ? 1 : 0;
  return { itemType, items };
}

/**
 * A value of type id `id` at the cursor.
 * @throws INVALID_DATA naming `where` for an unknown type, a count past the file or the limits, a string too long.
 */
export async function readValue(c: GgufCursor, id: number, where: string): Promise<{ type: GgufValueType; value: GgufValue }> {
  const type = typeOf(c, id, where);
  if (type === "array") return { type, value: await array(c, where, 1) };
  return { type, value: await scalar(c, type, where) };
}

/** Smallest bytes one key-value pair takes: key length, its type, a 1-byte value (an empty key is refused by name). */
export const MIN_KV_BYTES = 8 + 4 + 1;

/**
 * `count` key-value pairs at the cursor, in file order, keys checked as gguf.cpp checks them
 * (non-empty, no two alike).
 */
export async function readMetadata(c: GgufCursor, count: number): Promise<Map<string, GgufMetadataEntry>> {
  const out = new Map<string, GgufMetadataEntry>();
  for (let i = 0; i < count; i++) {
    const at = c.pos;
    const key = await c.string(`key ${i}`, true);
    if (key === "") throw ggufError(c.file, `key ${i} at byte ${at} is empty`);
    // gguf.cpp hands keys out as C strings and finds them by one (gguf_find_key): "a\0b" is "a" to
    // llama.cpp, so a key holding a NUL is read as another key there (general.alignment among them).
    if (key.includes("\0")) throw ggufError(c.file, `key ${i} at byte ${at}, ${JSON.stringify(key.slice(0, 200))}, holds a NUL, where gguf.cpp's C strings end (llama.cpp reads it as ${JSON.stringify(key.slice(0, key.indexOf("\0")))})`);
    if (out.has(key)) throw ggufError(c.file, `key ${i} at byte ${at}, ${JSON.stringify(key.slice(0, 200))}, is a duplicate of an earlier key`);
    await c.need(4, `key ${JSON.stringify(key.slice(0, 200))}'s type`);
    const { type, value } = await readValue(c, c.u32(), `key ${JSON.stringify(key.slice(0, 200))}`);
    out.set(key, { key, type, value });
  }
  return out;
}
