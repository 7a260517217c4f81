import assert from "node:assert/strict";
import { TensorcastError, type Tensor } from "../../src/index.js";

/** Asserts that `fn` throws a TensorcastError with `code` and, if given, a message matching `pattern`. */
export function throwsCode(fn: () => unknown, code: string, pattern?: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof TensorcastError, `expected a TensorcastError, got ${String(e)}`);
    // The message says what was rejected, which the code alone does not.
    assert.equal(e.code, code, e.message);
    if (pattern) assert.match(e.message, pattern);
    return true;
  });
}

/** Same type, shape and bits (strings: the same strings). */
export function assertSame(actual: Tensor, expected: Tensor, what: string): void {
  assert.equal(actual.dtype.name, expected.dtype.name, what);
  assert.deepEqual([...actual.shape], [...expected.shape], what);
  // Element by element, naming the first difference: node's assert would diff the whole of two
  // 65536-element arrays, which takes minutes.
  const a = expected.dtype.kind === "string" ? (actual.data as string[]) : actual.bytes();
  const e = expected.dtype.kind === "string" ? (expected.data as string[]) : expected.bytes();
  assert.equal(a.length, e.length, what);
  for (let i = 0; i < e.length; i++) {
    if (a[i] !== e[i]) assert.fail(`${what}: entry ${i} (of ${e.length}) is ${String(a[i])}, expected ${String(e[i])}`);
  }
}
