/**
 * The conversion pool (src/node/convert/pool.ts) and the exit paths of a conversion (issue 24
 * point 7): no more workers than work, cores and address space allow; a worker that fails to start
 * leaves fewer workers (or the calling thread) and the same bytes; one that dies mid-task is a
 * WORKER_FAILED error; and no exit path leaves the hidden temporary file.
 *
 * The `ulimit -v` tests run bin/tensorcast.js (dist/ must be built, as `npm test` does first).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { convertFile } from "../../src/node/index.js";
import { convertFileOn } from "../../src/node/convert/convert.js";
import { TaskPool } from "../../src/node/convert/pool.js";
import {
  addressSpaceLimit, addressSpaceUsed, MAIN_ADDRESS_SPACE, WORKER_ADDRESS_SPACE, workersThatFit,
} from "../../src/node/convert/address-space.js";
import { rejectsCode, randomFloat32, ROOT, safetensorsBytes, scratch } from "./helpers.js";

const BIN = join(ROOT, "bin", "tensorcast.js");
const built = existsSync(join(ROOT, "dist", "node", "cli", "main.js"));
const dir = scratch();

/** 1 MiB of float32 in one tensor: 16 chunks of 64 KiB. */
const input = join(dir, "in.safetensors");
writeFileSync(input, safetensorsBytes([{ name: "w", dtype: "float32", shape: [256, 1024], bytes: randomFloat32(256 * 1024, 24) }]));
const CHUNK = 64 * 1024;
/** 2 float32 values: one chunk. */
const tiny = join(dir, "tiny.safetensors");
writeFileSync(tiny, safetensorsBytes([{ name: "w", dtype: "float32", shape: [2], bytes: new Uint8Array(new Float32Array([1.5, 2.5]).buffer) }]));

/** The bytes every pool must produce: the calling thread's. */
const reference = join(dir, "reference.safetensors");
await convertFile(input, reference, { to: "float8e4m3fn", jobs: 0, chunkBytes: CHUNK });
const referenceBytes = readFileSync(reference);

function temporaries(): string[] {
  return readdirSync(dir).filter((f) => f.endsWith(".tmp"));
}

test("a pool has at most one worker per core, and --jobs 64 on a one-chunk file starts one", async () => {
  const pool = new TaskPool(64);
  assert.equal(pool.size, Math.min(64, availableParallelism(), workersThatFit(0)));
  assert.ok(pool.size <= availableParallelism());
  await pool.close();
  assert.equal(new TaskPool(0).size, 0);
  const report = await convertFile(tiny, join(dir, "tiny.f16.safetensors"), { to: "float16", jobs: 64 });
  assert.equal(report.workers, 1);
  const many = await convertFile(input, join(dir, "many.safetensors"), { to: "float8e4m3fn", jobs: 64, chunkBytes: CHUNK });
  assert.ok(many.workers >= 1 && many.workers <= availableParallelism(), `${many.workers} workers`);
  assert.deepEqual(readFileSync(join(dir, "many.safetensors")), referenceBytes);
});

test("no worker starts (a script that does not load): the calling thread converts, same bytes", { timeout: 60_000 }, async () => {
  const pool = new TaskPool(2, { script: new URL("./pool-workers/no-such-worker.js", import.meta.url) });
  try {
    const out = join(dir, "no-workers.safetensors");
    const report = await convertFileOn(input, out, { to: "float8e4m3fn", chunkBytes: CHUNK }, pool);
    assert.equal(report.workers, 0);
    assert.equal(pool.started, 0);
    assert.deepEqual(readFileSync(out), referenceBytes);
  } finally {
    await pool.close();
  }
});

test("one of two workers fails to start: the other does the work, same bytes", { skip: availableParallelism() < 2 && "one core", timeout: 60_000 }, async () => {
  const pool = new TaskPool(2, { script: new URL("./pool-workers/odd-fails.js", import.meta.url) });
  try {
    const out = join(dir, "one-worker.safetensors");
    const report = await convertFileOn(input, out, { to: "float8e4m3fn", chunkBytes: CHUNK }, pool);
    assert.equal(report.workers, 1);
    assert.deepEqual(readFileSync(out), referenceBytes);
  } finally {
    await pool.close();
  }
});

test("a worker that dies holding a task: WORKER_FAILED, no OUT, no temporary", { timeout: 60_000 }, async () => {
  const pool = new TaskPool(2, { script: new URL("./pool-workers/dies-on-task.js", import.meta.url) });
  const out = join(dir, "died.safetensors");
  try {
    await rejectsCode(convertFileOn(input, out, { to: "float8e4m3fn", chunkBytes: CHUNK }, pool), "WORKER_FAILED", /exited with code 7/);
  } finally {
    await pool.close();
  }
  assert.ok(!existsSync(out));
  assert.deepEqual(temporaries(), []);
});

test("process.exit() during a conversion (a callback, the CLI's uncaught-exception handler) removes the temporary", { timeout: 60_000 }, () => {
  const out = join(dir, "exited.safetensors");
  const script = `
    import { convertFile } from ${JSON.stringify(new URL("../../src/node/index.js", import.meta.url).href)};
    await convertFile(${JSON.stringify(input)}, ${JSON.stringify(out)}, {
      to: "float8e4m3fn", jobs: 2, chunkBytes: ${CHUNK}, onProgress: (done) => { if (done > ${4 * CHUNK}) process.exit(3); },
    });`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(r.status, 3, r.stderr);
  assert.ok(!existsSync(out));
  assert.deepEqual(temporaries(), []);
});

test("the address-space limit is read from /proc: 'unlimited', a number, VmSize in kB; room for workers", () => {
  assert.equal(addressSpaceLimit("Max stack size            8388608              unlimited            bytes\nMax address space         unlimited            unlimited            bytes\n"), undefined);
  assert.equal(addressSpaceLimit("Max address space         4096000000           unlimited            bytes\n"), 4096000000);
  assert.equal(addressSpaceLimit("Max cpu time              unlimited            unlimited            seconds\n"), undefined);
  assert.equal(addressSpaceUsed("Name:\tnode\nVmPeak:\t 1100 kB\nVmSize:\t  1024 kB\n"), 1048576);
  assert.equal(addressSpaceUsed("Name:\tnode\n"), undefined);
  const proc = (limit: string, usedKb: number) => (path: string): string =>
    path.endsWith("limits") ? `Max address space         ${limit}           unlimited            bytes\n` : `VmSize:\t${usedKb} kB\n`;
  const used = 1_000_000;
  const limit = used * 1024 + MAIN_ADDRESS_SPACE + 3 * WORKER_ADDRESS_SPACE;
  assert.equal(workersThatFit(0, proc("unlimited", used)), Infinity);
  assert.equal(workersThatFit(0, proc(String(limit), used)), 3);
  assert.equal(workersThatFit(0, proc(String(limit - 1), used)), 2);
  assert.equal(workersThatFit(2, proc(String(limit), used)), 1);
  assert.equal(workersThatFit(0, proc(String(used * 1024), used)), 0);
  assert.equal(workersThatFit(0, () => {
    throw new Error("no /proc here");
  }), Infinity);
});

/** Runs the CLI under `ulimit -v kb`. */
function underLimit(kb: number, args: string[]): { status: number | null; stderr: string; stdout: string } {
  const r = spawnSync("bash", ["-c", `ulimit -v ${kb} && exec "$0" "$@"`, process.execPath, BIN, ...args], { encoding: "utf8" });
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

// 1300000: where two workers of 32 MiB code range abort without the address-space check.
for (const kb of [1_300_000, 2_000_000, 4_000_000]) {
  test(`under ulimit -v ${kb}: --jobs 1, 2, 5, 64 convert (never V8's CodeRange abort), same bytes, no temporary`, { skip: !built && "dist/ is not built (npm run build)", timeout: 120_000 }, (t) => {
    // Node 24 needs about 1.46 GB of address space to run the CLI at all, workers or not (Node 20
    // 0.8 GB): below a runtime's own floor there is nothing --jobs can do.
    const alone = underLimit(kb, ["convert", input, "--to", "float8e4m3fn", "-o", join(dir, `alone.${kb}.safetensors`), "--jobs", "0"]);
    if (alone.status !== 0) {
      t.skip(`Node ${process.version} does not run the CLI at all under ulimit -v ${kb}, even with --jobs 0`);
      return;
    }
    for (const jobs of [1, 2, 5, 64]) {
      const out = join(dir, `limited.${kb}.${jobs}.safetensors`);
      const r = underLimit(kb, ["convert", input, "--to", "float8e4m3fn", "-o", out, "--jobs", String(jobs), "--chunk-size", String(CHUNK), "--json"]);
      assert.equal(r.status, 0, `--jobs ${jobs}: ${r.stderr}`);
      const workers = (JSON.parse(r.stdout) as { workers: number }).workers;
      assert.ok(workers <= Math.min(jobs, availableParallelism()), `--jobs ${jobs}: ${workers} workers`);
      assert.deepEqual(readFileSync(out), referenceBytes, `--jobs ${jobs}`);
      assert.deepEqual(temporaries(), []);
    }
  });
}
