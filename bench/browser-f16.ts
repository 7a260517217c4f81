/**
 * Native float16 (Float16Array, Math.f16round) against tensorcast's own kernels, inside Chromium,
 * which has both (Node 20 has neither): the measurement behind which pairs convert() sends to
 * src/kernels/native/float16.ts.
 *
 *   npx tsc -p tsconfig.test.json && node build/bench/browser-f16.js [--n 16777216] [--reps 7] [--warmup 2]
 *       [--only float32->float16,float16->float64]
 *
 * bench/browser-f16-page.ts is bundled with esbuild and run in headless Chromium (playwright-core,
 * test/browser/support.ts's launch options, plus --expose-gc for a collection before each timed
 * run). Per pair and input (every bit pattern uniformly: NaN, Inf and subnormals included; and
 * values like a model's), each contender converts `n` elements into its own output allocated
 * before timing; after `warmup` untimed rounds the contenders take turns for `reps` rounds. The
 * table gives the median as million elements per second, the ratio to the generic path, and
 * whether the bytes equal the generic path's (the reference's: test/kernels/*.test.ts).
 */
import os from "node:os";
import { join } from "node:path";
import * as esbuild from "esbuild";
import { chromium } from "playwright-core";
import type { BenchOptions, BenchResult } from "./browser-f16-page.js";
import { chromiumLaunchOptions, engineMissing } from "../test/browser/engines.js";
import { playgroundScript, ROOT } from "../test/browser/support.js";

function parseArgs(argv: string[]): BenchOptions {
  const o = { n: 16 * 1024 * 1024, reps: 7, warmup: 2, only: [] as string[] };
  for (let i = 0; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (k === "--n") o.n = Number(v);
    else if (k === "--reps") o.reps = Number(v);
    else if (k === "--warmup") o.warmup = Number(v);
    else if (k === "--only") o.only = v.split(",");
    else throw new Error(`unknown argument ${k}; expected --n, --reps, --warmup or --only`);
  }
  if (!(o.n > 0 && o.reps >= 1 && o.warmup >= 0)) throw new Error("--n and --reps must be positive, --warmup not negative");
  return o;
}

/** The page module as one browser ES module that sets globalThis.runF16Bench. */
async function bundle(): Promise<string> {
  const page = join(ROOT, "build", "bench", "browser-f16-page.js");
  const script = await playgroundScript();
  const result = await esbuild.build({
    stdin: {
      contents: `import { runF16Bench } from ${JSON.stringify(page)}; globalThis.runF16Bench = runF16Bench;`,
      resolveDir: ROOT, sourcefile: "browser-f16-entry.js", loader: "js",
    },
    bundle: true, format: "esm", platform: "browser", target: "es2022", write: false, logLevel: "silent",
    plugins: [script.noNodeBuiltins],
  });
  return result.outputFiles[0].text;
}

function table(r: BenchResult): string[] {
  const lines: string[] = [];
  const pairs = [...new Set(r.cases.map((c) => c.pair))];
  for (const pair of pairs) {
    const cases = r.cases.filter((c) => c.pair === pair);
    lines.push("", `${pair}: ${cases.map((c) => `${c.input} (${c.nanCount} NaN)`).join(", ")}`);
    lines.push(`| contender | ${cases.map((c) => `${c.input} M/s | vs generic`).join(" | ")} | bytes |`);
    lines.push(`|---|${cases.map(() => "---:|---:").join("|")}|---|`);
    for (let k = 0; k < cases[0].contenders.length; k++) {
      const cells = cases.map((c) => {
        const rate = r.n / c.contenders[k].ms / 1e3;
        return `${rate.toFixed(0)} | ${(c.contenders[0].ms / c.contenders[k].ms).toFixed(2)}x`;
      });
      const diff = cases.map((c) => c.contenders[k].differing);
      const bytes = diff.every((d) => d === 0) ? "same" : `${diff.join(" / ")} elements differ`;
      lines.push(`| ${cases[0].contenders[k].name} | ${cells.join(" | ")} | ${bytes} |`);
    }
  }
  return lines;
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const missing = engineMissing("chromium");
  if (missing) throw new Error(missing);
  const code = await bundle();
  const browser = await chromium.launch(chromiumLaunchOptions({ exposeGc: true }));
  try {
    const page = await browser.newPage();
    page.on("console", (m) => console.error(`  [page] ${m.text()}`));
    await page.setContent("<!doctype html><title>float16 bench</title>");
    await page.addScriptTag({ content: code, type: "module" });
    await page.waitForFunction(() => typeof (globalThis as { runF16Bench?: unknown }).runF16Bench === "function");
    const load0 = os.loadavg().map((x) => x.toFixed(2)).join(" ");
    const r = await page.evaluate(
      (opts) => (globalThis as unknown as { runF16Bench(o: BenchOptions, p: (s: string) => void): BenchResult })
        .runF16Bench(opts, (s) => console.log(s)),
      o,
    );
    const load1 = os.loadavg().map((x) => x.toFixed(2)).join(" ");
    console.log(`Chromium ${browser.version()} (${r.userAgent}); Float16Array ${r.float16Array}, Math.f16round ${r.f16round}`);
    console.log(`${os.cpus()[0]?.model ?? "?"} x ${os.cpus().length}; n = ${r.n}; median of ${r.reps} after ${r.warmup} warm-up rounds; load ${load0} -> ${load1}`);
    for (const line of table(r)) console.log(line);
  } finally {
    await browser.close();
  }
}

await main();
