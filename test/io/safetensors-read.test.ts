/**
 * The core's safetensors reader over a ByteSource (src/io/safetensors/read.ts, what the playground
 * reads a page's File with): the same header and tensors as tensorcast/node's file reader, runs of
 * elements equal to the whole read, and hostile files, sources and arguments refused with
 * TensorcastErrors that name what was given.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { TensorcastError } from "../../src/index.js";
import { blobSource, bytesSource, readSafetensors, readSafetensorsElements, type ByteSource } from "../../src/io/safetensors/index.js";
import { openTensorFile } from "../../src/node/index.js";

const PATH = new URL("../../../test/fixtures/checkpoints/example.safetensors", import.meta.url);
const BYTES = new Uint8Array(readFileSync(PATH));

const refused = (code: string, message: RegExp) => (e: unknown) => e instanceof TensorcastError && e.code === code && message.test(e.message);

test("readSafetensors reads what tensorcast/node's file reader reads, from bytes and from a Blob, a run at a time", async () => {
  const node = await openTensorFile(PATH.pathname);
  try {
    for (const src of [bytesSource(BYTES), blobSource(new Blob([BYTES]))]) {
      const f = await readSafetensors(src, { name: "example.safetensors" });
      assert.deepEqual(f.metadata, node.metadata);
      assert.deepEqual(f.tensors.map((t) => [t.name, t.dtype.name, t.shape, t.byteLength]), node.tensors.map((t) => [t.name, t.dtype.name, t.shape, t.byteLength]));
      for (const [i, t] of f.tensors.entries()) {
        const whole = await node.tensors[i].read(0, t.size);
        assert.deepEqual(await readSafetensorsElements(f, t, 0, t.size), whole, t.name);
        // Runs of 3 elements joined are the whole.
        const parts: number[] = [];
        for (let s = 0; s < t.size; s += 3) parts.push(...await readSafetensorsElements(f, t, s, Math.min(3, t.size - s)));
        assert.deepEqual(parts, [...whole], t.name);
      }
    }
  } finally {
    await node.close();
  }
});

test("readSafetensors refuses truncated and lying files, failing sources and bad arguments with TensorcastErrors", async () => {
  const f = await readSafetensors(bytesSource(BYTES), { name: "x.safetensors" });
  const t = f.tensors[0];
  await assert.rejects(readSafetensors(bytesSource(BYTES.subarray(0, 5)), { name: "x" }), refused("INVALID_DATA", /^x: is 5 bytes long/));
  await assert.rejects(readSafetensors(bytesSource(BYTES.subarray(0, 100)), { name: "x" }), refused("INVALID_DATA", /^x: is truncated/));
  await assert.rejects(readSafetensors(bytesSource(BYTES.subarray(0, BYTES.length - 1)), { name: "x" }), refused("INVALID_DATA", /reach past the end of the data/));
  const huge = BYTES.slice();
  new DataView(huge.buffer).setUint32(4, 0xffffffff, true);
  await assert.rejects(readSafetensors(bytesSource(huge), { name: "x" }), refused("INVALID_DATA", /over the 100000000-byte limit/));
  const liar: ByteSource = { size: BYTES.length, read: async () => new Uint8Array(2) };
  await assert.rejects(readSafetensors(liar, { name: "x" }), refused("IO_ERROR", /^x: a read of 8 bytes at 0 gave/));
  await assert.rejects(readSafetensors({ size: -1, read: async () => new Uint8Array(0) } as ByteSource), refused("INVALID_ATTRIBUTE", /takes a ByteSource/));
  await assert.rejects(readSafetensors(null as unknown as ByteSource), refused("INVALID_ATTRIBUTE", /takes a ByteSource/));
  await assert.rejects(readSafetensors(bytesSource(BYTES), { name: 3 as unknown as string }), refused("INVALID_ATTRIBUTE", /name must be a string, got 3/));
  await assert.rejects(readSafetensorsElements({ ...f }, t, 0, 1), refused("INVALID_ATTRIBUTE", /a file readSafetensors returned/));
  await assert.rejects(readSafetensorsElements(f, { ...t }, 0, 1), refused("INVALID_ATTRIBUTE", /one of x.safetensors's tensors/));
  for (const [start, count] of [[-1, 1], [0, t.size + 1], [t.size, 1], [0.5, 1], [0, NaN]]) {
    await assert.rejects(readSafetensorsElements(f, t, start, count), refused("INVALID_ATTRIBUTE", /are not a run of them/), `${start}, ${count}`);
  }
});
