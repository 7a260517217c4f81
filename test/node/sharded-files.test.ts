/**
 * The files of a sharded checkpoint's folder besides its shards (issue 24): a sparse one is copied
 * sparse, with the same bytes; copying counts in the progress; one with more than one hard link is
 * left out (it may be a second name of a file outside the folder), while a hard-linked shard is
 * converted (it is parsed as safetensors before any byte is used; docs/convert.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { closeSync, existsSync, ftruncateSync, linkSync, mkdirSync, openSync, readdirSync, readSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { convertCheckpoint } from "../../src/node/convert/sharded.js";
import { dataRuns, HOLE_BLOCK } from "../../src/node/io/holes.js";
import { randomFloat32, safetensorsBytes, scratch, sha256 } from "./helpers.js";

const dir = scratch();
const SHARD = "model-00001-of-00001.safetensors";
const GiB = 1024 * 1024 * 1024;

/** A one-shard checkpoint in `folder`, with config.json. */
function checkpoint(folder: string): void {
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, SHARD), safetensorsBytes([{ name: "w", dtype: "float32", shape: [64], bytes: randomFloat32(64, 8) }]));
  writeFileSync(join(folder, "model.safetensors.index.json"), JSON.stringify({ metadata: { total_size: 256 }, weight_map: { w: SHARD } }));
  writeFileSync(join(folder, "config.json"), '{"model_type": "llama"}\n');
}

/** Whether two files hold the same bytes, read 4 MiB at a time. */
function sameBytes(a: string, b: string): boolean {
  const size = statSync(a).size;
  if (statSync(b).size !== size) return false;
  const [fa, fb] = [openSync(a, "r"), openSync(b, "r")];
  try {
    const [ba, bb] = [Buffer.alloc(4 << 20), Buffer.alloc(4 << 20)];
    for (let at = 0; at < size; at += ba.length) {
      const n = Math.min(ba.length, size - at);
      readSync(fa, ba, 0, n, at);
      readSync(fb, bb, 0, n, at);
      if (!ba.subarray(0, n).equals(bb.subarray(0, n))) return false;
    }
    return true;
  } finally {
    closeSync(fa);
    closeSync(fb);
  }
}

test("dataRuns: blocks of zeros are left out, neighbouring data blocks merged, a short last block kept", () => {
  const B = 16;
  assert.deepEqual(dataRuns(new Uint8Array(0), B), []);
  assert.deepEqual(dataRuns(new Uint8Array(5 * B), B), []);
  const bytes = new Uint8Array(5 * B + 3);
  bytes[B] = 1; // block 1
  bytes[3 * B - 1] = 2; // block 2, its last byte
  bytes[5 * B + 2] = 3; // the short last block
  assert.deepEqual(dataRuns(bytes, B), [[B, 3 * B], [5 * B, 5 * B + 3]]);
  assert.deepEqual(dataRuns(bytes.subarray(B), B), [[0, 2 * B], [4 * B, 4 * B + 3]]);
  assert.deepEqual(dataRuns(new Uint8Array(3 * HOLE_BLOCK).fill(1, HOLE_BLOCK, HOLE_BLOCK + 1)), [[HOLE_BLOCK, 2 * HOLE_BLOCK]]);
});

test("a sparse 1 GiB file of the folder is copied with its bytes and stays sparse; its copy counts in the progress", { timeout: 120_000 }, async () => {
  const input = join(dir, "sparse.in");
  checkpoint(input);
  const big = join(input, "vocab-cache.dat");
  const fd = openSync(big, "w");
  ftruncateSync(fd, GiB);
  // Data at the start, in the middle (across a block and a chunk boundary) and in the last bytes.
  writeSync(fd, Buffer.from("start"), 0, 5, 0);
  writeSync(fd, Buffer.alloc(3 * HOLE_BLOCK, 7), 0, 3 * HOLE_BLOCK, 512 * 1024 * 1024 - HOLE_BLOCK - 1);
  writeSync(fd, Buffer.from("end"), 0, 3, GiB - 3);
  closeSync(fd);
  const used = (path: string): number => statSync(path).blocks * 512;
  assert.ok(used(big) < 1 << 20, `the input uses ${used(big)} bytes`);

  const out = join(dir, "sparse.out");
  const progress: [number, number][] = [];
  const report = await convertCheckpoint(input, out, { to: "bfloat16", onProgress: (done, total) => progress.push([done, total]) });
  assert.deepEqual(report.copied, ["config.json", "vocab-cache.dat"]);
  const copy = join(out, "vocab-cache.dat");
  assert.equal(statSync(copy).size, GiB);
  // Before: 1 GiB on disk (every zero written). Now the blocks with data: 5 of 64 KiB at most.
  assert.ok(used(copy) <= 5 * HOLE_BLOCK + 65536, `the copy uses ${used(copy)} bytes on disk`);
  assert.ok(sameBytes(big, copy), "the copy's bytes differ");
  const total = 256 + statSync(join(input, "config.json")).size + GiB;
  assert.deepEqual(progress[progress.length - 1], [total, total]);
  assert.ok(progress.every(([, t]) => t === total));
  // The 1 GiB copy reports as it goes (4 MiB chunks), not once at the end.
  assert.ok(progress.filter(([d]) => d > 256 && d < total).length >= 200, `${progress.length} progress calls`);
});

test("a file of the folder with two hard links is left out (it may be a file outside the folder); a hard-linked shard converts", async () => {
  const input = join(dir, "linked.in");
  checkpoint(input);
  const outside = join(dir, "private.txt");
  writeFileSync(outside, "a secret of the person converting\n");
  linkSync(outside, join(input, "tokenizer.json"));
  linkSync(join(input, SHARD), join(dir, "shard-elsewhere.safetensors"));
  const out = join(dir, "linked.out");
  const report = await convertCheckpoint(input, out, { to: "bfloat16" });
  assert.deepEqual(report.copied, ["config.json"]);
  assert.deepEqual(report.skipped, [{ name: "tokenizer.json", reason: "2 hard links: it may be a file outside the folder" }]);
  assert.ok(!existsSync(join(out, "tokenizer.json")));
  assert.deepEqual(readdirSync(out).sort(), ["config.json", SHARD, "model.safetensors.index.json"]);
  assert.equal(report.shards.length, 1);
  assert.equal(sha256(join(out, "config.json")), sha256(join(input, "config.json")));
});

test("process.exit() while a folder is built removes the hidden folder", { timeout: 60_000 }, () => {
  const input = join(dir, "exit.in");
  checkpoint(input);
  const fd = openSync(join(input, "large.dat"), "w");
  ftruncateSync(fd, 64 << 20);
  closeSync(fd);
  const out = join(dir, "exit.out");
  const script = `
    import { convertCheckpoint } from ${JSON.stringify(new URL("../../src/node/convert/sharded.js", import.meta.url).href)};
    await convertCheckpoint(${JSON.stringify(input)}, ${JSON.stringify(out)}, { to: "bfloat16", onProgress: (done) => { if (done > 1 << 20) process.exit(3); } });`;
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
  assert.equal(r.status, 3, r.stderr);
  assert.ok(!existsSync(out));
  assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith(".exit.out")), []);
});
