/**
 * A stand-in for `node:test` when a test file is bundled for the browser (bundleCodecChecks in
 * test/browser/support.ts maps the import here): `test(name, fn)` only registers, and
 * `runRegistered()` runs every registered test in order and reports counts and failures. A test
 * registered with `{ skip: reason }` (as node:test takes it: a platform without some feature) is
 * not run and is reported as skipped. Only what the bundled files use exists; a test file that
 * needs more fails to bundle ("No matching export"), loudly.
 */
type Body = (t: TestContext) => unknown;

export interface TestContext {
  readonly name: string;
}

/** The options node:test takes that this harness honours; the others (timeout, ...) are ignored. */
export interface TestOptions {
  /** Truthy: the test is not run and is reported as skipped, with this reason when it is a string. */
  readonly skip?: boolean | string;
}

const registered: { name: string; fn: Body; skip: string | undefined }[] = [];

/** `test(name, fn)` or `test(name, options, fn)`; of the options only `skip` is honoured. */
export function test(name: string, optionsOrFn: unknown, fn?: unknown): void {
  const body = (typeof optionsOrFn === "function" ? optionsOrFn : fn) as Body | undefined;
  if (typeof body !== "function") throw new Error(`browser harness: test "${name}" has no function`);
  const skip = typeof optionsOrFn === "object" && optionsOrFn !== null ? (optionsOrFn as TestOptions).skip : undefined;
  registered.push({ name, fn: body, skip: skip ? (typeof skip === "string" ? skip : "skipped") : undefined });
}
export default test;

export interface Failure {
  readonly name: string;
  readonly message: string;
}

export interface Skip {
  readonly name: string;
  readonly reason: string;
}

export interface TestSummary {
  /** Every registered test, skipped ones included: passed + failed + skipped. */
  readonly tests: number;
  readonly passed: number;
  readonly failed: number;
  /** Tests registered with `{ skip }`, not run (in node:test's words, "# SKIP reason"). */
  readonly skipped: readonly Skip[];
  /** Every test's name, in run order. */
  readonly names: readonly string[];
  /** At most ten, in run order; the first is the first mismatch. */
  readonly failures: readonly Failure[];
  readonly ms: number;
}

/** Runs the registered tests one after the other (awaiting async ones), except those to skip. */
export async function runRegistered(): Promise<TestSummary> {
  const start = Date.now();
  const failures: Failure[] = [];
  const skipped: Skip[] = [];
  let failed = 0;
  for (const { name, fn, skip } of registered) {
    if (skip !== undefined) {
      skipped.push({ name, reason: skip });
      continue;
    }
    try {
      await fn({ name });
    } catch (e) {
      failed++;
      if (failures.length < 10) failures.push({ name, message: e instanceof Error ? e.message : String(e) });
    }
  }
  return {
    tests: registered.length, passed: registered.length - failed - skipped.length, failed, skipped,
    names: registered.map((r) => r.name), failures, ms: Date.now() - start,
  };
}
