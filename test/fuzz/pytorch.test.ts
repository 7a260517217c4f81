/**
 * The PyTorch class of the fuzz suite (pytorch-cases.ts): mutated torch.save checkpoints through
 * the library in child processes under the suite's time and memory limits (supervise.ts). Every
 * case must be accepted (then its safetensors output must read back equal to what was read) or
 * refused with a TensorcastError; never a crash, hang or blow-up; and no hostile command ever runs
 * (the MARKER file each would create must not exist). Counts: runs(3000) cases (300 everyday).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { scratch } from "../node/helpers.js";
import { runs } from "../support/suite.js";
import { pytorchCases } from "./pytorch-cases.js";
import type { PytorchCaseResult } from "./pytorch-worker.js";
import { supervise } from "./supervise.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const LIMITS = { timeoutMs: 10_000, heapMb: 512, rssLimitBytes: 1536 * 2 ** 20, parallel: 2 };

test("PyTorch checkpoints, mutated: accepted or a clean error; 0 crashes, hangs, blow-ups or executions", { timeout: 1_800_000 }, async () => {
  const dir = scratch();
  const marker = join(dir, "EXECUTED");
  const cases = pytorchCases(runs(3000, 50), 0x7079, marker);
  cases.forEach((c, i) => writeFileSync(join(dir, `case-${i}.pt`), c.bytes));
  const { results, failures } = await supervise<PytorchCaseResult>(join(HERE, "pytorch-worker.js"), [dir], cases.length, LIMITS);
  const problems: string[] = [];
  const tally = { accepted: 0, clean: 0, converted: 0, hostile: 0 };
  for (let i = 0; i < cases.length; i++) {
    if (cases[i].label.includes("hostile")) tally.hostile++;
    const f = failures.get(i);
    if (f) {
      problems.push(`case ${i} (${cases[i].label}): ${f.kind}: ${f.detail}`);
      continue;
    }
    const r = results.get(i)!;
    for (const outcome of [r.open, r.convert]) if (outcome?.startsWith("X:")) problems.push(`case ${i} (${cases[i].label}): crash: ${outcome}`);
    for (const p of r.problems) problems.push(`case ${i} (${cases[i].label}): ${p}`);
    if (r.open === "ok") tally.accepted++;
    else tally.clean++;
    if (r.convert === "ok") tally.converted++;
  }
  console.log(`pytorch fuzz: ${cases.length} cases (${tally.hostile} with hostile calls): ${tally.accepted} accepted (${tally.converted} converted), ${tally.clean} clean errors, ${problems.length} failures`);
  assert.equal(existsSync(marker), false, "a hostile command ran");
  assert.deepEqual(problems, []);
  // The class reaches both outcomes: a fuzzer whose every case is refused tests one early check.
  assert.ok(tally.accepted > 0 && tally.clean > 0, JSON.stringify(tally));
});
