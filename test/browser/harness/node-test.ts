/**
 * A stand-in for `node:test` when a test file is bundled for the browser (test/browser/codec.ts
 * maps the import here): `test(name, fn)` only registers, and `runRegistered()` runs every
 * registered test in order and reports counts and failures. Only what the bundled files use
 * exists; a test file that needs more fails to bundle ("No matching export"), loudly.
 */
type Body = (t: TestContext) => unknown;

export interface TestContext {
  readonly name: string;
}

const registered: { name: string; fn: Body }[] = [];

/** `test(name, fn)` or `test(name, options, fn)`; options are ignored. */
export function test(name: string, optionsOrFn: unknown, fn?: unknown): void {
  const body = (typeof optionsOrFn === "function" ? optionsOrFn : fn) as Body | undefined;
  if (typeof body !== "function") throw new Error(`browser harness: test "${name}" has no function`);
  registered.push({ name, fn: body });
}
export default test;

export interface Failure {
  readonly name: string;
  readonly message: string;
}

export interface TestSummary {
  readonly tests: number;
  readonly passed: number;
  readonly failed: number;
  /** Every test's name, in run order. */
  readonly names: readonly string[];
  /** At most ten, in run order; the first is the first mismatch. */
  readonly failures: readonly Failure[];
  readonly ms: number;
}

/** Runs the registered tests one after the other (awaiting async ones). */
export async function runRegistered(): Promise<TestSummary> {
  const start = Date.now();
  const failures: Failure[] = [];
  let failed = 0;
  for (const { name, fn } of registered) {
    try {
      await fn({ name });
    } catch (e) {
      failed++;
      if (failures.length < 10) failures.push({ name, message: e instanceof Error ? e.message : String(e) });
    }
  }
  return {
    tests: registered.length, passed: registered.length - failed, failed,
    names: registered.map((r) => r.name), failures, ms: Date.now() - start,
  };
}
