/**
 * Files with hundreds of thousands of tensors (issue 13, defects 3 and 4): `inspect`, `diff` and
 * `convert` print every row without a stack overflow (the table renderer once spread all rows
 * into Math.max) and without building the output as one string, and opening and inspecting such a
 * file fits in a heap a few times the header's size. Time is not asserted; bench/headers.ts
 * measures it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { openTensorFile, type InspectReport } from "../../src/node/index.js";
import { cli, rawSafetensors, scratch } from "./helpers.js";

const dir = scratch();
const N = 200_000;

/** N empty float32 tensors t000000 ... then "w", four float32 values 1, 2, 3, 4. */
function manyTensors(n: number): Uint8Array {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(`"t${String(i).padStart(6, "0")}":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`);
  parts.push('"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}');
  return rawSafetensors(`{${parts.join(",")}}`, new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer));
}

const path = join(dir, "many.safetensors");
writeFileSync(path, manyTensors(N));

test(`inspect prints all ${N + 1} rows, as a table and as JSON`, async () => {
  const r = await cli(["inspect", path]);
  assert.equal(r.code, 0, r.err);
  const lines = r.out.trimEnd().split("\n");
  assert.equal(lines.length, 2 + N + 1);
  assert.match(lines[0], new RegExp(`many\\.safetensors: safetensors, ${N + 1} tensors, `));
  assert.equal(lines[1], "tensor   dtype    shape  bytes  min  max  mean  nan  inf");
  assert.equal(lines[2], "t000000  float32  [0]        0    -    -     -    0    0");
  assert.equal(lines[2 + N - 1], "t199999  float32  [0]        0    -    -     -    0    0");
  assert.equal(lines[2 + N], "w        float32  [4]       16    1    4   2.5    0    0");
  const json = JSON.parse((await cli(["inspect", path, "--json"])).out) as InspectReport;
  assert.equal(json.tensors.length, N + 1);
  assert.deepEqual(json.tensors[N], {
    name: "w", dtype: "float32", shape: [4], elements: 4, bytes: 16, stats: { count: 4, min: 1, max: 4, sum: 10, finite: 4, nan: 0, inf: 0, mean: 2.5 },
  });
});

test(`convert and diff a file of ${N + 1} tensors`, async () => {
  const out = join(dir, "many.bf16.safetensors");
  const r = await cli(["convert", path, "--to", "bfloat16", "-o", out]);
  assert.equal(r.code, 0, r.err);
  const lines = r.out.trimEnd().split("\n");
  assert.equal(lines.length, 2 + N + 1 + 2);
  assert.match(lines[2], /^t000000 +\[0\] +float32 +bfloat16 +0 +0 +0 +0$/);
  assert.match(lines.at(-1)!, new RegExp(`^${N + 1} of ${N + 1} tensors converted; `));
  const file = await openTensorFile(out);
  try {
    assert.equal(file.tensors.length, N + 1);
    const w = file.tensors.find((t) => t.name === "w")!;
    assert.equal(w.dtype.name, "bfloat16");
    assert.deepEqual([...(await w.read(0, 4))], [0x80, 0x3f, 0x00, 0x40, 0x40, 0x40, 0x80, 0x40]);
  } finally {
    await file.close();
  }
  const d = await cli(["diff", path, out]);
  assert.equal(d.code, 0, d.err);
  assert.match(d.out, new RegExp(`\\n${N + 1} of ${N + 1} common tensors identical\\n$`));
});

/** Runs `job` (a function of the library and the file) in a child whose JS heap is capped at `mib` MiB; returns what it prints. */
function inCappedHeap(mib: number, job: string): string {
  const library = new URL("../../src/node/index.js", import.meta.url).href;
  const code = `const lib = await import(${JSON.stringify(library)}); console.log(await (${job})(lib, ${JSON.stringify(path)}));`;
  return execFileSync(process.execPath, [`--max-old-space-size=${mib}`, "--input-type=module", "-e", code], { stdio: ["ignore", "pipe", "pipe"] }).toString().trim();
}

test(`opening and inspecting ${N + 1} tensors fits in a heap a few times the header's size (12 MB)`, () => {
  // Opening keeps about 170 bytes a tensor (its object, shape array and name) and needs 48 MiB
  // here; the whole inspect report, 96 MiB. Building a JSON.parse tree of the header first took
  // more than 64 and 192 MiB.
  assert.equal(inCappedHeap(64, "async (lib, p) => { const f = await lib.openTensorFile(p); await f.close(); return f.tensors.length; }"), String(N + 1));
  assert.equal(inCappedHeap(128, "async (lib, p) => (await lib.inspectFile(p)).tensors.length"), String(N + 1));
});
