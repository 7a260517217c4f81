/**
 * test/fixtures/gguf-quantize/golden.json: the SHA-256 of the test models and of llama_model_quantize's
 * output for each case of quantize-cases.ts (made by make-quantize-golden.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root, from build/test/io/gguf. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
export const GOLDEN_PATH = join(ROOT, "test", "fixtures", "gguf-quantize", "golden.json");

export interface QuantGolden {
  readonly made: string;
  readonly models: Readonly<Record<string, string>>;
  readonly outputs: Readonly<Record<string, string>>;
}

export const GOLDEN: QuantGolden = existsSync(GOLDEN_PATH)
  ? (JSON.parse(readFileSync(GOLDEN_PATH, "utf8")) as QuantGolden)
  : { made: "", models: {}, outputs: {} };
