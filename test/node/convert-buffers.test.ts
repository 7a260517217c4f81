/**
 * convertFile reuses its chunk buffers (reads into them, converts into them, gets them back from
 * the workers): with chunks large enough to be written straight from those buffers (not gathered
 * and copied), several in flight, tensors of several sizes and types, converted and kept, on the
 * calling thread and on workers, every byte is still cast's and the statistics are those of the
 * whole tensor.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cast, Tensor } from "../../src/index.js";
import { convertFile, openTensorFile } from "../../src/node/index.js";
import { ChunkBuffers, KEEP_BYTES } from "../../src/node/convert/buffers.js";
import { ResidentChunks } from "../../src/node/convert/cast-tally.js";
import { measureConversion } from "../../src/node/convert/kernel.js";
import { randomBytes, randomFloat32, safetensorsBytes, scratch, type RawTensor } from "./helpers.js";

const dir = scratch();

const TENSORS: RawTensor[] = [
  { name: "a.f32", dtype: "float32", shape: [40000], bytes: randomFloat32(40000, 21, 80000) },
  { name: "b.bf16", dtype: "bfloat16", shape: [30001], bytes: randomBytes(60002, 22) },
  { name: "c.f32", dtype: "float32", shape: [7, 10001], bytes: randomFloat32(70007, 23, 1e5) },
  { name: "d.i32", dtype: "int32", shape: [50000], bytes: randomBytes(200000, 24) },
  { name: "e.f16", dtype: "float16", shape: [33333], bytes: randomBytes(66666, 25) },
  { name: "f.f32", dtype: "float32", shape: [16385], bytes: randomFloat32(16385, 26, 3) },
];

const input = join(dir, "buffers.safetensors");
writeFileSync(input, safetensorsBytes(TENSORS));

for (const to of ["bfloat16", "float16", "float8e4m3fn"] as const) {
  test(`reused chunk buffers, to ${to}: cast's bytes and the whole tensors' statistics, on the calling thread and on workers`, async () => {
    const outputs: Buffer[] = [];
    for (const [jobs, chunkBytes] of [[0, 65536], [0, 40000], [2, 65536], [2, 131072]] as const) {
      const out = join(dir, `buffers.${to}.${jobs}.${chunkBytes}.safetensors`);
      const report = await convertFile(input, out, { to, jobs, chunkBytes });
      const file = await openTensorFile(out);
      try {
        for (const t of TENSORS) {
          const x = Tensor.fromBytes(t.bytes, t.dtype, t.shape);
          const written = file.tensors.find((w) => w.name === t.name)!;
          const bytes = await written.read(0, written.size);
          const r = report.tensors.find((e) => e.name === t.name)!;
          const label = `${t.name}, jobs ${jobs}, chunks of ${chunkBytes} bytes`;
          if (r.converted) {
            const y = cast(x, to);
            assert.deepEqual(bytes, y.bytes(), label);
            assert.deepEqual(r.stats, measureConversion(x, y, "float64"), label);
          } else {
            assert.deepEqual(bytes, t.bytes, label);
          }
        }
      } finally {
        await file.close();
      }
      outputs.push(readFileSync(out));
    }
    for (const o of outputs) assert.deepEqual(o, outputs[0]);
  });
}

test("ChunkBuffers: a buffer given back is taken again once, never by two takers; views and shared memory are not kept", () => {
  const buffers = new ChunkBuffers();
  const a = buffers.take(4096);
  assert.equal(a.length, 4096);
  buffers.give(a);
  buffers.give(a);
  const first = buffers.take(4096);
  const second = buffers.take(4096);
  assert.equal(first, a);
  assert.notEqual(second, a);
  buffers.give(new Uint8Array(8192).subarray(0, 4096));
  buffers.give(new Uint8Array(new SharedArrayBuffer(4096)));
  const third = buffers.take(4096);
  assert.equal(third.buffer.byteLength, 4096);
  assert.ok(!(third.buffer instanceof SharedArrayBuffer));
});

test("ChunkBuffers keeps at most KEEP_BYTES: the sizes given back least recently go first", () => {
  const buffers = new ChunkBuffers();
  const mib = 1024 * 1024;
  // A checkpoint's last chunks: a size each.
  for (let i = 1; i <= 200; i++) buffers.give(new Uint8Array(mib + i));
  assert.ok(buffers.keptBytes <= KEEP_BYTES, `${buffers.keptBytes} bytes kept`);
  assert.ok(buffers.keptBytes > KEEP_BYTES - 2 * mib, `${buffers.keptBytes} bytes kept`);
  // The newest sizes are the ones kept.
  const newest = buffers.take(mib + 200);
  assert.equal(buffers.keptBytes <= KEEP_BYTES - mib, true);
  buffers.give(newest);
  const oldest = buffers.take(mib + 1);
  buffers.give(oldest);
  assert.ok(buffers.keptBytes <= KEEP_BYTES);
  // One buffer larger than the whole allowance is never kept.
  const huge = new Uint8Array(KEEP_BYTES + 1);
  buffers.give(huge);
  assert.notEqual(buffers.take(KEEP_BYTES + 1), huge);
  // Taking gives the bytes back to the allowance.
  const before = buffers.keptBytes;
  const again = buffers.take(mib + 199);
  assert.equal(again.length, mib + 199);
  assert.equal(buffers.keptBytes, before - (mib + 199));
});

test("without workers, float32 -> bfloat16 / float16 chunks live in resident slots, each given back; with workers, none", async () => {
  const proto = ResidentChunks.prototype;
  const take = proto.take;
  const give = proto.give;
  let taken = 0;
  let given = 0;
  proto.take = function (this: ResidentChunks, length: number) {
    const slot = take.call(this, length);
    if (slot) taken++;
    return slot;
  };
  proto.give = function (this: ResidentChunks, bytes: Uint8Array) {
    const mine = give.call(this, bytes);
    if (mine) given++;
    return mine;
  };
  try {
    for (const to of ["bfloat16", "float16"] as const) {
      for (const jobs of [0, 2]) {
        taken = given = 0;
        const out = join(dir, `resident.${to}.${jobs}.safetensors`);
        await convertFile(input, out, { to, jobs, chunkBytes: 65536, force: true });
        if (jobs === 0) {
          // a.f32, c.f32 and f.f32: 40000 + 70007 + 16385 float32 in chunks of 16384, each an input and an output slot.
          assert.ok(taken >= 2 * (3 + 5 + 2), `${to}: ${taken} slots taken`);
          assert.equal(given, taken, `${to}: every slot given back`);
        } else {
          assert.equal(taken, 0, `${to}, ${jobs} workers: no resident slots`);
        }
      }
    }
  } finally {
    proto.take = take;
    proto.give = give;
  }
});
