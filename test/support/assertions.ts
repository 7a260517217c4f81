import assert from "node:assert/strict";
import { TensorcastError } from "../../src/index.js";

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
