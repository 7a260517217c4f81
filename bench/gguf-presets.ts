/**
 * What each llama-quantize preset costs and keeps, for the README's table: the F16 test model
 * `table` of test/support/gguf-quant-models.ts (4 layers, n_embd 512, vocab 1024, pseudo-random
 * weights) quantized by `tensorcast quantize --mode P` to every preset that needs no importance
 * matrix, each file's size and bits per weight, and llama.cpp (node-llama-cpp's CPU build, run as
 * the tests run it: test/support/llama-run.ts) evaluating the same prompts on each, against its
 * run of the F32 file: how often the most likely next token is F32's, the mean Kullback-Leibler
 * divergence KL(F32 || P) of the next-token distributions, and the mean absolute change of F32's
 * most likely token's probability.
 *
 *   node build/bench/gguf-presets.js [--prompts N] [--markdown]
 *
 * Random weights are no trained model: the numbers rank the presets and show what each keeps of
 * the F32 output, not what a real model's perplexity does. Not a test: a table to read.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LLAMA_PRESETS } from "../src/ggml/presets.js";
import { quantizeGgufFile } from "../src/node/quantize/gguf.js";
import { llamaRun, llamaRunMissing } from "../test/support/llama-run.js";
import { quantModel, writeQuantModel } from "../test/support/gguf-quant-models.js";
import { Rng } from "../test/support/rng.js";

/** The presets llama.cpp refuses without an importance matrix (llama-quantize's own list). */
const NEEDS_IMATRIX = new Set(["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS", "Q2_K_S"]);

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1]! : fallback;
}

interface Row {
  preset: string;
  bytes: number;
  bitsPerWeight: number;
  top1: number;
  meanKl: number;
  meanTopShift: number;
}

async function main(): Promise<void> {
  const missing = llamaRunMissing();
  if (missing !== undefined) throw new Error(`gguf-presets needs llama.cpp: ${missing}`);
  const promptCount = Number(arg("--prompts", "24"));
  const dir = mkdtempSync(join(tmpdir(), "tensorcast-gguf-presets-"));
  try {
    const input = join(dir, "table-f16.gguf");
    await writeQuantModel("table", input, "gpt2");
    const { tensors } = quantModel("table", "gpt2");
    const weights = tensors.reduce((n, t) => n + t.dims.reduce((a, b) => a * b, 1), 0);
    const vocab = 1024;
    const rng = new Rng(0x9a7e);
    const prompts = Array.from({ length: promptCount }, () => Array.from({ length: 12 }, () => rng.below(vocab)));
    const presets = ["F32", ...LLAMA_PRESETS.filter((p) => p.aliasOf === undefined && !NEEDS_IMATRIX.has(p.name) && p.name !== "F32").map((p) => p.name)];
    const files = new Map<string, string>();
    for (const preset of presets) {
      const out = join(dir, `table-${preset}.gguf`);
      await quantizeGgufFile(input, out, { preset, jobs: 0 });
      files.set(preset, out);
    }
    const jobs = presets.flatMap((preset) => prompts.map((prompt) => ({ model: files.get(preset)!, prompt })));
    const results = await llamaRun(jobs);
    const probabilities = new Map<string, Float32Array[]>();
    presets.forEach((preset, i) => {
      probabilities.set(preset, results.slice(i * promptCount, (i + 1) * promptCount).map((r) => {
        if (r.probabilities === undefined) throw new Error(`llama.cpp did not run ${preset}: ${r.error}`);
        return r.probabilities;
      }));
    });
    const reference = probabilities.get("F32")!;
    const rows: Row[] = presets.map((preset) => {
      let top1 = 0;
      let kl = 0;
      let shift = 0;
      probabilities.get(preset)!.forEach((q, k) => {
        const p = reference[k]!;
        let best = 0;
        let bestQ = 0;
        for (let i = 1; i < p.length; i++) {
          if (p[i]! > p[best]!) best = i;
          if (q[i]! > q[bestQ]!) bestQ = i;
        }
        if (best === bestQ) top1++;
        for (let i = 0; i < p.length; i++) if (p[i]! > 0) kl += p[i]! * Math.log(p[i]! / Math.max(q[i]!, 1e-30));
        shift += Math.abs(q[best]! - p[best]!);
      });
      const bytes = statSync(files.get(preset)!).size;
      // KL is never negative; the clamp of q's zeros can leave a sum of a few ulps below zero.
      return { preset, bytes, bitsPerWeight: (bytes * 8) / weights, top1, meanKl: Math.max(0, kl / promptCount), meanTopShift: shift / promptCount };
    });
    rows.sort((a, b) => a.bytes - b.bytes);
    const markdown = process.argv.includes("--markdown");
    console.log(`# ${weights.toLocaleString("en")} weights; ${promptCount} prompts of 12 tokens; llama.cpp (node-llama-cpp 3.21.1, CPU) on each file against its F32 run`);
    if (markdown) {
      console.log("| preset | size | bits/weight | same next token as F32 | KL(F32 ‖ preset), nats | change of F32's top probability |");
      console.log("|---|---:|---:|---:|---:|---:|");
    }
    for (const r of rows) {
      const cells = [r.preset, `${(r.bytes / 2 ** 20).toFixed(2)} MiB`, r.bitsPerWeight.toFixed(2), `${r.top1}/${promptCount}`, r.meanKl.toExponential(2), r.meanTopShift.toFixed(4)];
      console.log(markdown ? `| ${cells.join(" | ")} |` : cells.map((c, i) => (i === 0 ? c.padEnd(10) : c.padStart(12))).join(" "));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
