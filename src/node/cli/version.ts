/**
 * The package version, read from package.json at run time so it can never disagree with what npm
 * installed. The file is found by walking up from this module because the module runs from
 * different depths: dist/node/cli/ when installed, build/src/node/cli/ under the tests.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { TensorcastError } from "../../errors.js";
import { parseJsonFile } from "../io/json.js";

const PACKAGE_NAME = "tensorcast";

let cached: string | undefined;

/** @throws TensorcastError INTERNAL when no tensorcast package.json lies above this module (a broken install). */
export function packageVersion(): string {
  if (cached !== undefined) return cached;
  const start = dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const pkg = parseJsonFile(readFileSync(file, "utf8"), file) as { name?: unknown; version?: unknown } | null;
      if (pkg?.name === PACKAGE_NAME && typeof pkg.version === "string") return (cached = pkg.version);
    }
    if (dirname(dir) === dir) break;
  }
  throw new TensorcastError("INTERNAL", `tensorcast: no package.json named "${PACKAGE_NAME}" above ${start}`);
}
