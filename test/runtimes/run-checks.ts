/**
 * Run by another JavaScript runtime (Bun, Deno; Node for the reference): the exhaustive codec
 * tests and the cast digest from a bundle made by bundleCodecChecks(), and the README's examples.
 * Prints one JSON line for test/runtimes/bun-deno.test.ts to compare with Node's.
 * Usage: RUNTIME run-checks.js CODEC_BUNDLE README
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import type { CodecChecks } from "../browser/support.js";
import { runReadmeExamples } from "../support/readme-examples.js";

const [bundle, readme] = process.argv.slice(2);
const checks = (await import(pathToFileURL(bundle).href)) as { runCodecChecks(): Promise<CodecChecks> };
const codec = await checks.runCodecChecks();
const examples = runReadmeExamples(readFileSync(readme, "utf8"));
console.log(JSON.stringify({ codec, examples, float16Array: typeof (globalThis as Record<string, unknown>).Float16Array === "function" }));
