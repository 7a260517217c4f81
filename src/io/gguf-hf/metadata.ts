/**
 * The minimal view of a GGUF file that the Hugging Face conversion needs: its metadata as a map
 * and its tensor table with row-major shapes. Any reader can fill these in; nothing here parses
 * bytes.
 */
import { TensorcastError } from "../../errors.js";

/** One metadata value: GGUF integers up to 32 bits and floats as numbers, 64-bit integers as number or bigint. */
export type GgufValue = number | bigint | string | boolean | readonly GgufValue[] | ArrayLike<number>;

/** GGUF metadata, keyed as in the file (`general.architecture`, `llama.block_count`, ...). */
export type GgufMetadata = ReadonlyMap<string, GgufValue>;

/** One entry of the tensor table: its GGUF name and its row-major shape (GGML's order reversed). */
export interface GgufTensorInfo {
  readonly name: string;
  readonly shape: readonly number[];
}

function isList(v: GgufValue): v is readonly GgufValue[] | ArrayLike<number> {
  return typeof v === "object" && v !== null && typeof (v as ArrayLike<unknown>).length === "number";
}

/** A metadata number (a bigint inside the safe range is accepted), or undefined when absent. */
export function getNumber(meta: GgufMetadata, key: string): number | undefined {
  const v = meta.get(key);
  if (v === undefined) return undefined;
  if (typeof v === "number") return v;
  if (typeof v === "bigint") {
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new TensorcastError("INVALID_DATA", `GGUF key ${key} is ${v}, beyond 2^53; a count or size was expected`);
    }
    return Number(v);
  }
  if (typeof v === "boolean") return v ? 1 : 0;
  throw new TensorcastError("INVALID_DATA", `GGUF key ${key} holds a ${describe(v)}; a number was expected`);
}

/** A non-negative integer, as counts and sizes are. */
export function getCount(meta: GgufMetadata, key: string): number | undefined {
  const n = getNumber(meta, key);
  if (n !== undefined && !(Number.isInteger(n) && n >= 0)) {
    throw new TensorcastError("INVALID_DATA", `GGUF key ${key} is ${n}; a non-negative integer was expected`);
  }
  return n;
}

export function getString(meta: GgufMetadata, key: string): string | undefined {
  const v = meta.get(key);
  if (v === undefined) return undefined;
  if (typeof v !== "string") {
    throw new TensorcastError("INVALID_DATA", `GGUF key ${key} holds a ${describe(v)}; a string was expected`);
  }
  return v;
}

export function getBoolean(meta: GgufMetadata, key: string): boolean | undefined {
  const v = meta.get(key);
  if (v === undefined) return undefined;
  if (typeof v !== "boolean") {
    throw new TensorcastError("INVALID_DATA", `GGUF key ${key} holds a ${describe(v)}; a boolean was expected`);
  }
  return v;
}

export function getStrings(meta: GgufMetadata, key: string): readonly string[] | undefined {
  const v = meta.get(key);
  if (v === undefined) return undefined;
  if (!isList(v) || !Array.prototype.every.call(v, (x: unknown) => typeof x === "string")) {
    throw new TensorcastError("INVALID_DATA", `GGUF key ${key} holds a ${describe(v)}; an array of strings was expected`);
  }
  return Array.from(v as ArrayLike<string>);
}

export function getNumbers(meta: GgufMetadata, key: string): readonly number[] | undefined {
  const v = meta.get(key);
  if (v === undefined) return undefined;
  if (!isList(v)) {
    throw new TensorcastError("INVALID_DATA", `GGUF key ${key} holds a ${describe(v)}; an array of numbers was expected`);
  }
  const out = new Array<number>(v.length);
  for (let i = 0; i < v.length; i++) {
    const x = (v as ArrayLike<unknown>)[i];
    if (typeof x === "number") out[i] = x;
    else if (typeof x === "bigint") out[i] = Number(x);
    else throw new TensorcastError("INVALID_DATA", `GGUF key ${key}[${i}] is a ${describe(x as GgufValue)}; a number was expected`);
  }
  return out;
}

function describe(v: GgufValue): string {
  if (isList(v)) return `array of ${v.length}`;
  return typeof v;
}
