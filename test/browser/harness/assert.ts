/**
 * A stand-in for `node:assert/strict` in the browser bundle of the codec tests: the strict
 * comparisons (Object.is for `equal` / `notEqual`, structural for `deepEqual`), `ok`, `match`,
 * `throws` (with a validating function, a RegExp or an object of expected keys) and `fail`. A method the
 * tests start to use that is missing here throws, naming it, rather than passing silently.
 */
export class AssertionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AssertionError";
  }
}

function show(x: unknown): string {
  if (typeof x === "string") return JSON.stringify(x);
  if (typeof x === "bigint") return `${x}n`;
  if (Array.isArray(x) || ArrayBuffer.isView(x)) {
    const items = Array.from(x as ArrayLike<unknown>).slice(0, 20).map(show);
    return `[${items.join(", ")}${(x as ArrayLike<unknown>).length > 20 ? ", ..." : ""}]`;
  }
  return Object.is(x, -0) ? "-0" : String(x);
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (Array.isArray(a) || ArrayBuffer.isView(a)) {
    const x = a as ArrayLike<unknown>;
    const y = b as ArrayLike<unknown>;
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!deepEqual(x[i], y[i])) return false;
    return true;
  }
  if (a instanceof Map || a instanceof Set) throw new AssertionError("browser harness: deepEqual of Map / Set is not implemented");
  const ka = Object.keys(a);
  const kb = Object.keys(b as object);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

const methods = {
  ok(value: unknown, message?: string): void {
    if (!value) throw new AssertionError(message ?? `expected a truthy value, got ${show(value)}`);
  },
  equal(actual: unknown, expected: unknown, message?: string): void {
    if (!Object.is(actual, expected)) throw new AssertionError(message ?? `expected ${show(expected)}, got ${show(actual)}`);
  },
  deepEqual(actual: unknown, expected: unknown, message?: string): void {
    if (!deepEqual(actual, expected)) throw new AssertionError(message ?? `expected ${show(expected)}, got ${show(actual)}`);
  },
  notEqual(actual: unknown, expected: unknown, message?: string): void {
    if (Object.is(actual, expected)) throw new AssertionError(message ?? `expected a value other than ${show(expected)}`);
  },
  match(text: string, pattern: RegExp, message?: string): void {
    if (!pattern.test(text)) throw new AssertionError(message ?? `expected ${show(text)} to match ${pattern}`);
  },
  /**
   * `validate` as node's: a function that returns true for the error (or throws its own failure), a
   * RegExp its message must match, or an object whose every key the error must hold, deep-equal.
   */
  throws(fn: () => unknown, validate?: ((e: unknown) => boolean) | RegExp | Record<string, unknown>, message?: string): void {
    let thrown = false;
    let error: unknown;
    try {
      fn();
    } catch (e) {
      thrown = true;
      error = e;
    }
    if (!thrown) throw new AssertionError(message ?? "expected the function to throw");
    const valid = validate === undefined ? true
      : typeof validate === "function" ? validate(error) === true
      : validate instanceof RegExp ? validate.test(String((error as { message?: unknown })?.message ?? error))
      : Object.entries(validate).every(([k, v]) => deepEqual((error as Record<string, unknown>)?.[k], v));
    if (!valid) throw new AssertionError(message ?? `the error did not validate: ${String(error)}`);
  },
  fail(message?: string): never {
    throw new AssertionError(message ?? "failed");
  },
};

type Assert = ((value: unknown, message?: string) => void) & typeof methods;

const target = Object.assign((value: unknown, message?: string) => methods.ok(value, message), methods);

/** `assert(x)`, `assert.equal`, ...; any other property throws when it is used. */
const assert: Assert = new Proxy(target, {
  get(t, key, receiver) {
    if (typeof key === "string" && !(key in t)) {
      throw new Error(`browser harness: assert.${key} is not implemented in test/browser/harness/assert.ts`);
    }
    return Reflect.get(t, key, receiver);
  },
});
export default assert;
