/**
 * GGUF quantization on the conversion workers: `quantizeGgufFile` and `convertToGgufFile` write the
 * same bytes in the calling thread and on two workers, with bands of a tensor's whole size and with
 * bands of a row or two (a tensor split across many tasks, their results written in order), with
 * and without importance weights; a row the loader check refuses is refused from a worker with the
 * same error as in the calling thread.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createHash } from "node:crypto";
import { quantizeGgufFile } from "../../src/node/quantize/gguf.js";
import { convertToGgufFile } from "../../src/node/quantize/gguf-convert.js";
import { ggufBytes, quantModel, writeQuantModel } from "../support/gguf-quant-models.js";
import { Rng } from "../support/rng.js";

let dir: string;
let wide: string;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), "tensorcast-gguf-jobs-"));
  wide = join(dir, "wide.gguf");
  await writeQuantModel("wide", wide);
});
after(() => rmSync(dir, { recursive: true, force: true }));

const digest = (path: string): string => createHash("sha256").update(readFileSync(path)).digest("hex");

/** The ways of running one job: the calling thread, two workers, and both with bands of one to three rows. */
const RUNS = [
  { jobs: 0 }, { jobs: 2 }, { jobs: 0, bandValues: 300 }, { jobs: 2, bandValues: 300 }, { jobs: 2, bandValues: 700 },
] as const;

/** Runs `job` in each of RUNS' ways into its own file and asserts every file is the same. */
async function assertSameEveryRun(what: string, job: (out: string, run: (typeof RUNS)[number]) => Promise<unknown>): Promise<void> {
  const digests = new Set<string>();
  for (const [i, run] of RUNS.entries()) {
    const out = join(dir, `${what}-${i}.gguf`);
    await job(out, run);
    digests.add(digest(out));
  }
  assert.equal(digests.size, 1, `every ${what} run writes the same file`);
}

test("quantize --mode Q4_K_M: the same bytes with 0 and 2 workers, whole and small bands", async () => {
  await assertSameEveryRun("Q4_K_M", (out, run) => quantizeGgufFile(wide, out, { preset: "Q4_K_M", ...run }));
});

test("quantize with importance weights (IQ4_XS, Q3_K_M): the same bytes with 0 and 2 workers, whole and small bands", async () => {
  const rng = new Rng(0x1a7);
  const imatrixData = new Map<string, Float32Array>();
  for (const t of quantModel("wide").tensors) {
    if (t.dims.length < 2) continue;
    imatrixData.set(t.name, Float32Array.from({ length: t.dims[0] }, () => 0.01 + rng.below(1000) / 100));
  }
  for (const preset of ["IQ4_XS", "Q3_K_M"]) {
    await assertSameEveryRun(preset, (out, run) => quantizeGgufFile(wide, out, { preset, imatrix: true, imatrixData, ...run }));
  }
});

test("convert --to q6_k: the same bytes with 0 and 2 workers, whole and small bands", async () => {
  await assertSameEveryRun("q6_k", (out, run) => convertToGgufFile(wide, out, { to: "q6_k", ...run }));
});

test("a NaN in a tensor's later band is refused from a worker as in the calling thread, and nothing is written", async () => {
  const m = quantModel("wide");
  const t = m.tensors.find((x) => x.name === "blk.1.attn_q.weight")!;
  const data = t.data as Uint8Array;
  // Row 200 of 256 (F16): 0x7e00 is a NaN.
  data[2 * (200 * 256 + 7)] = 0x00;
  data[2 * (200 * 256 + 7) + 1] = 0x7e;
  const path = join(dir, "nan.gguf");
  writeFileSync(path, await ggufBytes(m.metadata, m.tensors));
  const messages = new Set<string>();
  for (const [i, run] of RUNS.entries()) {
    const out = join(dir, `nan-${i}.gguf`);
    await assert.rejects(quantizeGgufFile(path, out, { preset: "Q4_K_M", ...run }), (e: Error & { code?: string }) => {
      assert.equal(e.code, "INVALID_DATA");
      messages.add(e.message);
      return true;
    });
    assert.equal(existsSync(out), false);
  }
  assert.equal(messages.size, 1, [...messages].join("\n"));
  assert.match([...messages][0], /tensor "blk\.1\.attn_q\.weight" has invalid data: nan at element 51207 /);
});
