/**
 * Which suite is running, and how many random cases a property or fuzz test draws.
 *
 * Two suites run the same files (scripts/run-tests.mjs):
 *   npm test            the everyday suite: every file not marked full-only, random counts scaled
 *                       down (TENSORCAST_RUNS defaults to 0.1 there)
 *   npm run test:full   every file, every test, today's counts (TENSORCAST_RUNS defaults to 1)
 *
 * A file whose first line is `// suite: full` runs only in the full suite (browsers, other
 * runtimes, the packed tarball, big files); a single test inside an everyday file takes
 * `{ skip: fullOnly }`. TENSORCAST_RUNS is the one knob for every count: fast-check's numRuns
 * and the fuzz classes' cases are all `runs(countAtFullSize)`.
 *
 * Access goes through globalThis so the browser-safe test files that import this still load in a
 * page, where there is no process.
 */
const env: Record<string, string | undefined> =
  (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};

/** True under `npm run test:full` (the runner sets TENSORCAST_SUITE=full). */
export const FULL = env.TENSORCAST_SUITE === "full";

/** `{ skip: fullOnly }` leaves a test to the full suite; the reason shows in the everyday report. */
export const fullOnly: false | string = FULL ? false : "full suite only (npm run test:full)";

/** The scale on every random count: TENSORCAST_RUNS, else 1 in the full suite and 0.1 in the everyday one. */
export const RUN_SCALE: number = (() => {
  const given = env.TENSORCAST_RUNS;
  if (given === undefined || given === "") return FULL ? 1 : 0.1;
  const n = Number(given);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`TENSORCAST_RUNS must be a positive number, got ${JSON.stringify(given)}`);
  return n;
})();

/** `full` random cases scaled by RUN_SCALE, at least `min` (so the smoke size still runs each class). */
export function runs(full: number, min = 1): number {
  return Math.max(min, Math.round(full * RUN_SCALE));
}

/**
 * A positive integer from the environment (a per-test override such as TENSORCAST_FUZZ_CASES), else
 * `fallback`.
 */
export function envCount(name: string, fallback: number): number {
  const given = env[name];
  if (given === undefined || given === "") return fallback;
  const n = Number(given);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got ${JSON.stringify(given)}`);
  return n;
}

/**
 * fast-check's parameters for a property: `runs(full)` cases from a fixed seed. A failure's
 * report gives the seed and the path of the shrunk case; the runner turns them into
 * TENSORCAST_FC_SEED / TENSORCAST_FC_PATH, and the property with that seed replays just that case.
 */
export function property(full: number, seed: number, min = 1): { numRuns: number; seed: number; path?: string; endOnFailure?: boolean } {
  const replay = env.TENSORCAST_FC_PATH;
  if (replay && Number(env.TENSORCAST_FC_SEED) === seed) return { numRuns: runs(full, min), seed, path: replay, endOnFailure: true };
  return { numRuns: runs(full, min), seed };
}
