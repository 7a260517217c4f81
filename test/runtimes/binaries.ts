/**
 * Where the tests find Bun and Deno: the binaries .ci/run fetches from the npm registry
 * (@oven/bun-linux-x64's bin/bun, @deno/linux-x64-glibc's deno) and names in TENSORCAST_BUN and
 * TENSORCAST_DENO. Without one a test is skipped with the reason, except under CI, where it fails;
 * TENSORCAST_OTHER_RUNTIMES_IN (set by .ci/run on the Node lines that do not run them) skips them
 * everywhere with a note of where they do run.
 */
import { existsSync } from "node:fs";

export interface Runtime {
  readonly name: string;
  readonly env: string;
  /** The command line that runs a script file with every permission the tests need. */
  readonly argv: (binary: string) => string[];
}

export const RUNTIMES: readonly Runtime[] = [
  { name: "Bun", env: "TENSORCAST_BUN", argv: (b) => [b] },
  { name: "Deno", env: "TENSORCAST_DENO", argv: (b) => [b, "run", "--allow-read", "--allow-write", "--allow-env", "--allow-sys"] },
];

/**
 * `rt`'s binary; or `skip`, why its tests are skipped here; or `fail`, why they fail (CI, and the
 * binary is missing).
 */
export function findRuntime(rt: Runtime): { binary: string } | { skip: string } | { fail: string } {
  const binary = process.env[rt.env];
  const missing = !binary ? `${rt.env} is not set` : !existsSync(binary) ? `${rt.env}=${binary} does not exist` : undefined;
  if (!missing) return { binary: binary! };
  const elsewhere = process.env.TENSORCAST_OTHER_RUNTIMES_IN;
  if (elsewhere) return { skip: `${rt.name} is checked in ${elsewhere}` };
  if (process.env.CI) return { fail: `${rt.name}: ${missing} (.ci/run fetches it from the npm registry)` };
  return { skip: `${missing}: ${rt.name} is fetched by .ci/run (npm pack)` };
}
