/**
 * Node-side helpers of the browser tests: where things are, the playground script's API, and the
 * bundle of the exhaustive codec tests that runs in Node, in each browser engine, and in Bun and
 * Deno. Launching the engines is engines.ts's.
 */
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import type { Server } from "node:http";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";

/** The repository root (this file runs from build/test/browser/). */
export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** Screenshots and bundles the tests write; not committed. */
export const OUTPUT = join(ROOT, "test-output");

/** What scripts/playground.mjs exports. */
export interface PlaygroundScript {
  readonly ROOT: string;
  readonly CORE_GZIP_BUDGET: number;
  readonly noNodeBuiltins: esbuild.Plugin;
  isNodeBuiltin(path: string): boolean;
  bundleCore(o?: { entry?: string; minify?: boolean }): Promise<{ code: Uint8Array; bytes: number; gzipBytes: number }>;
  buildPlayground(o?: { out?: string }): Promise<{ out: string; coreBytes: number; coreGzipBytes: number }>;
  servePlayground(o?: { dir?: string; port?: number; host?: string; isolated?: boolean }): Promise<{ server: Server; url: string }>;
}

export async function playgroundScript(): Promise<PlaygroundScript> {
  return (await import(pathToFileURL(join(ROOT, "scripts", "playground.mjs")).href)) as PlaygroundScript;
}

const sites = new Map<string, ReturnType<PlaygroundScript["buildPlayground"]>>();

/**
 * The playground built once per test file into test-output/`folder` (each file its own folder:
 * node --test runs the files side by side).
 */
export function playgroundSite(folder: string): ReturnType<PlaygroundScript["buildPlayground"]> {
  let site = sites.get(folder);
  if (!site) {
    site = (async () => {
      const script = await playgroundScript();
      await mkdir(OUTPUT, { recursive: true });
      return script.buildPlayground({ out: join(OUTPUT, folder) });
    })();
    sites.set(folder, site);
  }
  return site;
}

/** Where axe-core's browser build is: node_modules (a devDependency), or AXE_CORE_PATH. */
export const AXE_PATH = process.env.AXE_CORE_PATH ?? join(ROOT, "node_modules", "axe-core", "axe.min.js");
export const AXE_MISSING = `${AXE_PATH} is missing: axe-core (a devDependency) is not installed`;

/**
 * axe-core's violations on a page (every rule axe runs by default, WCAG 2.x A and AA and best
 * practices), as "rule (help): target" lines, through the page driver's `evaluate` of a source
 * expression; undefined when axe-core is not installed (under CI that throws instead).
 */
export async function axeViolations(evaluate: (source: string) => Promise<string[]>): Promise<string[] | undefined> {
  if (!existsSync(AXE_PATH)) {
    if (process.env.CI) throw new Error(`CI=${process.env.CI} and ${AXE_MISSING}`);
    return undefined;
  }
  const source = await readFile(AXE_PATH, "utf8");
  // axe's UMD build sets globalThis.axe when run as a plain script body.
  return evaluate(`(async () => { ${source}\n;
    const r = await globalThis.axe.run();
    return r.violations.flatMap((v) => v.nodes.map((n) => v.id + " (" + v.help + "): " + n.target.join(" ")));
  })()`);
}

/** The exhaustive codec test files that also run in the browsers, compiled (build/test/...). */
export const CODEC_TEST_FILES = [
  "test/dtype/minifloat.test.js", "test/ops/cast-exhaustive.test.js", "test/kernels/native-float16.test.js", "test/kernels/wasm.test.js",
  "test/kernels/fast.test.js", "test/float16-array.test.js", "test/arena.test.js",
  // The quantization operators: their SIMD paths (relaxed SIMD where the engine has it) and the
  // exact oracle's property tests, in every engine. quantize-exhaustive is left to Node (47 s).
  "test/ops/quantize-simd.test.js", "test/ops/quantize-rules.test.js", "test/ops/quantize-properties.test.js",
  "test/ops/quantize-dynamic-properties.test.js", "test/kernels/quant-simd.test.js", "test/kernels/quant-checkpoint-simd.test.js",
];

/**
 * Bundles the compiled codec tests, with `node:test` and `node:assert/strict` replaced by the
 * harness in test/browser/harness/, and the cast digest, into one ES module for the browser that
 * exports (and sets on globalThis) `runCodecChecks()`. Written to test-output/codec-checks.mjs,
 * so Node can import the very same file.
 * @returns the file's path and its code.
 */
export async function bundleCodecChecks(): Promise<{ file: string; code: string }> {
  const build = join(ROOT, "build");
  const harness = join(build, "test", "browser", "harness");
  const entry = [
    `import { runRegistered } from ${JSON.stringify(join(harness, "node-test.js"))};`,
    `import { castDigest } from ${JSON.stringify(join(harness, "cast-digest.js"))};`,
    ...CODEC_TEST_FILES.map((f) => `import ${JSON.stringify(join(build, f))};`),
    "export async function runCodecChecks() {",
    "  const tests = await runRegistered();",
    "  const start = Date.now();",
    "  const digest = castDigest();",
    "  return { tests, digest: { ...digest, ms: Date.now() - start } };",
    "}",
    "globalThis.runCodecChecks = runCodecChecks;",
  ].join("\n");
  const shims: esbuild.Plugin = {
    name: "node-test-shims",
    setup(b) {
      b.onResolve({ filter: /^node:test$/ }, () => ({ path: join(harness, "node-test.js") }));
      b.onResolve({ filter: /^node:assert\/strict$/ }, () => ({ path: join(harness, "assert.js") }));
    },
  };
  const script = await playgroundScript();
  const result = await esbuild.build({
    stdin: { contents: entry, resolveDir: ROOT, sourcefile: "codec-checks-entry.js", loader: "js" },
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    logLevel: "silent",
    // package.json says "sideEffects": false, which would drop the test files, imported only for their test() calls.
    ignoreAnnotations: true,
    plugins: [shims, script.noNodeBuiltins],
  });
  const code = result.outputFiles[0].text;
  await mkdir(OUTPUT, { recursive: true });
  const file = join(OUTPUT, "codec-checks.mjs");
  await writeFile(file, code);
  return { file, code };
}

export interface CodecChecks {
  readonly tests: {
    readonly tests: number;
    readonly passed: number;
    readonly failed: number;
    /** Tests the platform lacks a feature for (Node 20: no Float16Array), with the reason. */
    readonly skipped: readonly { name: string; reason: string }[];
    readonly names: readonly string[];
    readonly failures: readonly { name: string; message: string }[];
    readonly ms: number;
  };
  readonly digest: {
    readonly hashes: Readonly<Record<string, string>>;
    readonly conversions: number;
    readonly elements: number;
    readonly ms: number;
  };
}

/** One element as the playground's tables spell it (the CLI's spelling of numbers). */
export function formatElement(v: unknown): string {
  if (typeof v === "number") {
    if (v !== v) return "nan";
    if (v === Infinity) return "inf";
    if (v === -Infinity) return "-inf";
    if (Object.is(v, -0)) return "-0";
    if (Number.isInteger(v) && Math.abs(v) >= 2 ** 53 && Math.abs(v) < 1e21) return BigInt(v).toString();
    return String(v);
  }
  if (typeof v === "bigint" || typeof v === "boolean") return String(v);
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `(${v.map(formatElement).join(", ")})`;
  return String(v);
}
