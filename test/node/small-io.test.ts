/**
 * Files of many small pieces: RandomAccessFile serves small reads from a read-ahead window,
 * AtomicOutput gathers small writes, and the ONNX file walker parses fields straight from its
 * window (issue 13, defect 4). Each is checked against the bytes themselves (or the in-memory
 * decoder), across window edges and in any order.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Tensor } from "../../src/index.js";
import { decodeModel } from "../../src/io/onnx/model.js";
import { WireWriter } from "../../src/io/onnx/wire-writer.js";
import { openTensorFile } from "../../src/node/index.js";
import { AtomicOutput, RandomAccessFile } from "../../src/node/io/file.js";
import { random, scratch } from "./helpers.js";

const dir = scratch();

test("RandomAccessFile: small and large reads anywhere give the file's bytes, each the caller's own", async () => {
  const next = random(7);
  const bytes = new Uint8Array(300_000).map(() => next() & 0xff);
  const path = join(dir, "random.bin");
  writeFileSync(path, bytes);
  const file = await RandomAccessFile.open(path);
  try {
    for (let i = 0; i < 20_000; i++) {
      // Lengths around the small-read limit (4 KiB) and positions near the 64 KiB read-ahead's ends.
      const length = i % 3 === 0 ? next() % 9000 : next() % 40;
      const position = i % 5 === 0 ? Math.max(0, 65_536 * (1 + (next() % 4)) - (next() % 50)) : next() % (bytes.length - length);
      const got = await file.read(Math.min(position, bytes.length - length), length);
      assert.deepEqual(got, bytes.subarray(Math.min(position, bytes.length - length), Math.min(position, bytes.length - length) + length));
    }
    // A caller that writes into what it got changes nothing a later read sees.
    const first = await file.read(100, 8);
    first.fill(0xee);
    assert.deepEqual(await file.read(100, 8), bytes.subarray(100, 108));
    const into = new Uint8Array(16);
    assert.equal(await file.read(200, 16, into), into);
    assert.deepEqual(into, bytes.subarray(200, 216));
    // Concurrent reads, which may each refill the window, all get their own bytes.
    const spots = Array.from({ length: 2000 }, () => next() % (bytes.length - 16));
    const all = await Promise.all(spots.map((p) => file.read(p, 16)));
    all.forEach((got, i) => assert.deepEqual(got, bytes.subarray(spots[i], spots[i] + 16)));
    await assert.rejects(file.read(bytes.length - 3, 4), { code: "INVALID_DATA" });
  } finally {
    await file.close();
  }
});

test("AtomicOutput: small and large writes, in order, out of order and at once, give exactly the bytes written", async () => {
  const next = random(9);
  // Pieces of 0 to ~40 KB (around the 16 KiB gathering limit), most of them small.
  const pieces: { at: number; bytes: Uint8Array }[] = [];
  let size = 0;
  for (let i = 0; i < 20_000; i++) {
    // The last ones small, so that only finish() can write them.
    const n = i >= 19_997 ? 5 : i % 50 === 0 ? next() % 40_000 : i % 7 === 0 ? 16_384 + (next() % 3) - 1 : next() % 64;
    pieces.push({ at: size, bytes: new Uint8Array(n).map(() => next() & 0xff) });
    size += n;
  }
  const want = new Uint8Array(size);
  for (const p of pieces) want.set(p.bytes, p.at);
  // Mostly in order, as the converter writes; some neighbours swapped; up to 4 writes in flight.
  const order = pieces.map((_, i) => i);
  for (let i = 0; i + 1 < order.length; i++) if (next() % 10 === 0) [order[i], order[i + 1]] = [order[i + 1], order[i]];
  const path = join(dir, "gathered.bin");
  const out = await AtomicOutput.create(path);
  for (let i = 0; i < order.length; i += 4) {
    await Promise.all(order.slice(i, i + 4).map(async (k) => {
      const bytes = pieces[k].bytes.slice();
      await out.write(bytes, pieces[k].at);
      // The caller may reuse its buffer once the write settles, though a small one is written later.
      bytes.fill(0xa5);
    }));
  }
  await out.finish(size);
  await out.commit(false);
  // Buffer.compare: deepEqual would spell out a 50 MB difference (and run out of memory doing so).
  const got = readFileSync(path);
  assert.equal(got.length, size);
  assert.equal(Buffer.compare(got, want), 0, "the file differs from the bytes written");
});

/**
 * A TensorProto as a writer other than ours might lay it out: dims packed or not, a name of any
 * length, an unknown group (which protobuf skips) in some, a doc_string after the data, and the
 * data as raw_data or float_data.
 */
function tensorProto(i: number, next: () => number): Uint8Array {
  const w = new WireWriter();
  const shape = [1 + (next() % 3), 1 + (next() % 5)];
  if (i % 2 === 0) for (const d of shape) w.int64Field(1, d);
  else {
    w.fork(1);
    for (const d of shape) w.uint32(d);
    w.join();
  }
  const float = i % 4 < 2;
  w.uint32Field(2, float ? 1 : 3 /* INT8 */);
  if (i % 7 === 3) {
    w.tag(99, 3).uint32Field(1, i).tag(98, 3).stringField(2, "inside").tag(98, 4).tag(99, 4);
  }
  w.stringField(8, `t${i}-${"n".repeat(next() % 400)}`);
  const size = shape[0] * shape[1];
  const values = Array.from({ length: size }, () => (next() % 200) - 100);
  if (float && i % 3 === 0) {
    w.fork(4);
    for (const v of values) w.float(v / 8);
    w.join();
  } else {
    const t = Tensor.fromValues(float ? values.map((v) => v / 8) : values, float ? "float32" : "int8", shape);
    w.bytesField(9, t.bytes());
  }
  if (i % 5 === 0) w.stringField(12, `doc ${i}`);
  return w.finish().slice();
}

test("an .onnx of 3,000 small initializers laid out every way lists and reads as decodeModel does", async () => {
  const next = random(11);
  const graph = new WireWriter().stringField(2, "g");
  for (let i = 0; i < 3000; i++) graph.bytesField(5, tensorProto(i, next));
  const model = new WireWriter().uint32Field(1, 8);
  model.fork(8).stringField(1, "").uint32Field(2, 17).join();
  model.bytesField(7, graph.finish().slice());
  const bytes = model.finish().slice();
  assert.ok(bytes.length > 3 * 65_536, "the model spans several read-ahead windows");
  const path = join(dir, "small.onnx");
  writeFileSync(path, bytes);

  const want = decodeModel(readFileSync(path)).graph.initializers;
  const file = await openTensorFile(path);
  try {
    assert.equal(file.tensors.length, want.length);
    for (let i = 0; i < want.length; i++) {
      const got = file.tensors[i];
      const label = `initializer ${i}`;
      assert.equal(got.name, want[i].name, label);
      assert.equal(got.dtype.name, want[i].tensor.dtype.name, label);
      assert.deepEqual(got.shape, want[i].tensor.shape, label);
      assert.deepEqual(await got.read(0, got.size), want[i].tensor.bytes(), label);
    }
  } finally {
    await file.close();
  }
});
