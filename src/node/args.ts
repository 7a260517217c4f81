/**
 * Argument checks for tensorcast/node's public functions, as src/args.ts makes them for the core:
 * a JavaScript caller's wrong value is a TensorcastError naming it, never Node's
 * ERR_INVALID_ARG_TYPE from inside fs or a TypeError from a method the value lacks.
 */
import { describe } from "../args.js";
import { TensorcastError } from "../errors.js";
import { DTYPES, type DType } from "../dtype/table.js";

/**
 * `path` must be a string without NUL (which no file name holds; fs refuses it with an error of
 * its own). Buffers and URLs, which fs also takes, are not accepted: every message names the path
 * as text. An empty path is left to the callers, whose messages say what it should have named.
 * @example expectPath("model.onnx", "convertFile's input") // passes
 * @throws TensorcastError INVALID_ATTRIBUTE naming `what` and what was given.
 */
export function expectPath(path: unknown, what: string): asserts path is string {
  if (typeof path !== "string" || path.includes("\0")) {
    throw new TensorcastError(
      "INVALID_ATTRIBUTE",
      `${what} must be a file path (a string without NUL), got ${typeof path === "string" ? "a string holding NUL" : describe(path)}`,
    );
  }
}

/**
 * `opts` must be undefined or an object (not null, an array or a function).
 * @throws TensorcastError INVALID_ATTRIBUTE.
 */
export function expectOptionsObject(opts: unknown, fn: string): void {
  if (opts === undefined) return;
  if (typeof opts !== "object" || opts === null || Array.isArray(opts)) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${fn}'s options must be an object, got ${describe(opts)}`);
  }
}

/**
 * `x` must be an array of strings.
 * @throws TensorcastError INVALID_DATA naming the first entry that is not.
 */
export function expectStrings(x: unknown, what: string): asserts x is string[] {
  if (!Array.isArray(x)) throw new TensorcastError("INVALID_DATA", `${what} must be an array of strings, got ${describe(x)}`);
  for (let i = 0; i < x.length; i++) {
    if (typeof x[i] !== "string") throw new TensorcastError("INVALID_DATA", `${what}: entry ${i} is ${describe(x[i])}, not a string`);
  }
}

/** Whether `x` is one of tensorcast's DType objects (what `dtype()` returns). */
export function isDType(x: unknown): x is DType {
  return typeof x === "object" && x !== null && DTYPES.some((d) => d === x);
}
