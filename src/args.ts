/**
 * Argument checks for the public functions, made before anything is allocated, so that a wrong
 * argument from JavaScript (no type checker) is a TensorcastError with a stable code naming what
 * was given, never a TypeError or RangeError from deep inside. Internal callers, whose arguments
 * TypeScript has checked, call the unchecked functions directly.
 */
import { TensorcastError } from "./errors.js";

/**
 * A short, bounded description of any value, for error messages (never JSON.stringify of input).
 * Total: a revoked proxy, or one whose traps throw, is "an object", not an exception of its own.
 */
export function describe(x: unknown): string {
  try {
    return describeValue(x);
  } catch {
    return typeof x === "function" ? "a function" : "an object";
  }
}

function describeValue(x: unknown): string {
  if (x === null) return "null";
  if (x === undefined) return "undefined";
  if (typeof x === "string") return x.length > 40 ? `a string of ${x.length} characters` : JSON.stringify(x);
  if (typeof x === "number") return exactNumber(x);
  if (typeof x === "boolean") return String(x);
  if (typeof x === "bigint") return `${x}n`;
  if (typeof x === "symbol" || typeof x === "function") return `a ${typeof x}`;
  // A short array of plain values is spelled out ([1, 2], a complex pair); anything else is counted,
  // so a hostile value (nested a million deep, a billion long) costs nothing to describe.
  if (Array.isArray(x)) {
    const plain = x.length <= 4 && x.every((v) => typeof v === "number" || typeof v === "boolean" || typeof v === "bigint" || (typeof v === "string" && v.length <= 40));
    return plain ? `[${x.map(describe).join(", ")}]` : `an Array of ${x.length}`;
  }
  if (ArrayBuffer.isView(x) && isDetached(x.buffer)) return `a ${x.constructor.name} over a detached ArrayBuffer`;
  const name = (x as object).constructor?.name;
  return `a ${typeof name === "string" && name.length <= 40 ? name : "object"}`;
}

/**
 * `x` in decimal, exactly: an integer from 2^53 to 1e21 as its digits (String() would give the
 * shortest round-trip form, 2^62 as 4611686018427388000, which is a different integer); other
 * numbers as String() writes them.
 * @example exactNumber(2 ** 62) // "4611686018427387904"
 */
export function exactNumber(x: number): string {
  return Number.isInteger(x) && Math.abs(x) >= 2 ** 53 && Math.abs(x) < 1e21 ? BigInt(x).toString() : String(x);
}

/** `x` must be a non-null object (not an array). */
export function expectObject(x: unknown, what: string, code: "INVALID_DATA" | "INVALID_ATTRIBUTE" = "INVALID_DATA"): asserts x is Record<string, unknown> {
  if (typeof x !== "object" || x === null || Array.isArray(x)) {
    throw new TensorcastError(code, `${what} must be an object, got ${describe(x)}`);
  }
}

/**
 * `opts` must be undefined or an object whose keys are all in `allowed`, each value passing its
 * check (undefined always passes). Unknown keys are refused, as cast, reshape and bitcast do.
 */
export function expectOptions(
  opts: unknown, fn: string, allowed: Readonly<Record<string, (v: unknown) => boolean>>, expected: Readonly<Record<string, string>> = {},
): void {
  if (opts === undefined) return;
  expectObject(opts, `${fn}'s options`, "INVALID_ATTRIBUTE");
  for (const key of Object.keys(opts)) {
    // Own keys only: "toString" must not find Object.prototype's.
    const check = Object.hasOwn(allowed, key) ? allowed[key] : undefined;
    if (!check) {
      const names = Object.keys(allowed);
      throw new TensorcastError("INVALID_ATTRIBUTE", `${fn}: unknown option ${describe(key)}; it accepts ${names.length ? names.join(", ") : "no options"}`);
    }
    const v = opts[key];
    if (v !== undefined && !check(v)) {
      throw new TensorcastError("INVALID_ATTRIBUTE", `${fn}: option ${key} must be ${expected[key] ?? "valid"}, got ${describe(v)}`);
    }
  }
}

export const isString = (v: unknown): boolean => typeof v === "string";
export const isBoolean = (v: unknown): boolean => typeof v === "boolean";

/** `bytes` must be a Uint8Array (a Node Buffer is one) whose buffer is not detached. */
export function expectBytes(bytes: unknown, what: string): asserts bytes is Uint8Array {
  if (!(bytes instanceof Uint8Array)) {
    throw new TensorcastError("INVALID_DATA", `${what} must be a Uint8Array, got ${describe(bytes)}`);
  }
  // A view of a detached buffer (transferred to a worker, or a disposed tensor's bytes) reads as
  // empty, and every new view of its buffer throws a bare TypeError.
  if (bytes.byteLength === 0 && isDetached(bytes.buffer)) {
    throw new TensorcastError("INVALID_DATA", `${what} is a Uint8Array whose ArrayBuffer is detached (transferred or released): it holds no bytes`);
  }
}

/**
 * Whether `buffer` is detached. Node 20 has no `ArrayBuffer.prototype.detached`: there, only a
 * buffer of length 0 can be, and an empty view of it throws exactly when it is.
 */
export function isDetached(buffer: ArrayBufferLike): boolean {
  const flag = (buffer as { detached?: unknown }).detached;
  if (typeof flag === "boolean") return flag;
  if (buffer.byteLength !== 0) return false;
  try {
    new Uint8Array(buffer, 0, 0);
    return false;
  } catch {
    return true;
  }
}

/** `x` must be an integer in [min, max]. */
export function expectInteger(x: unknown, what: string, min: number, max: number, code: "INVALID_ATTRIBUTE" | "INVALID_DATA" = "INVALID_ATTRIBUTE"): asserts x is number {
  if (typeof x !== "number" || !Number.isInteger(x) || x < min || x > max) {
    throw new TensorcastError(code, `${what} must be an integer in [${min}, ${max}], got ${describe(x)}`);
  }
}

/** `x` must be an array; `what` names it. */
export function expectArray(x: unknown, what: string): asserts x is unknown[] {
  if (!Array.isArray(x)) throw new TensorcastError("INVALID_DATA", `${what} must be an array, got ${describe(x)}`);
}
