/**
 * `tensorcast quantize IN.gguf --mode PRESET -o OUT.gguf --split-max-tensors N / --split-max-size S /
 * --keep-split`: the parts read back as the one model the unsplit output is (the same tensors, bytes
 * and metadata, split.* added), cut where llama-gguf-split's rule cuts; refusals name the options.
 * (The bytes of --keep-split against llama_model_quantize: test/io/gguf/quantize-split-peer.test.ts.)
 */
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { runCli } from "../support/cli.js";
import { writeQuantModel, writeSplitQuantModel } from "../support/gguf-quant-models.js";
import { openGguf } from "../../src/node/io/gguf.js";
import { readGgufBlocks } from "../../src/io/gguf/records.js";
import type { GgufModel, GgufModelTensor } from "../../src/io/gguf/split.js";
import { splitByGgufSplit } from "../../src/io/gguf/split-write.js";

const dir = mkdtempSync(join(tmpdir(), "tensorcast-quantize-split-"));
const input = join(dir, "wide.gguf");
before(() => writeQuantModel("wide", input));
after(() => rmSync(dir, { recursive: true, force: true }));

const bytesOf = (m: GgufModel, t: GgufModelTensor): Promise<Uint8Array> => readGgufBlocks(m, t, 0, t.byteLength / t.ggmlType.typeSize);

async function assertSameModel(splitPath: string, wholePath: string, parts: number): Promise<number[]> {
  const a = await openGguf(splitPath);
  const b = await openGguf(wholePath);
  try {
    assert.equal(a.model.files.length, parts);
    assert.deepEqual([...a.model.metadata.keys()], [...b.model.metadata.keys(), "split.no", "split.count", "split.tensors.count"]);
    for (const [k, e] of b.model.metadata) assert.deepEqual(a.model.metadata.get(k)?.value, e.value, k);
    assert.deepEqual(a.model.tensors.map((t) => t.name), b.model.tensors.map((t) => t.name));
    for (let i = 0; i < b.model.tensors.length; i++) {
      assert.equal(a.model.tensors[i]!.ggmlType, b.model.tensors[i]!.ggmlType);
      assert.ok(Buffer.from(await bytesOf(a.model, a.model.tensors[i]!)).equals(Buffer.from(await bytesOf(b.model, b.model.tensors[i]!))), b.model.tensors[i]!.name);
    }
    return a.model.files.map((f) => f.tensors.length);
  } finally {
    await a.close();
    await b.close();
  }
}

test("--split-max-tensors and --split-max-size: the unsplit output's model in llama-gguf-split's parts", async () => {
  const whole = join(dir, "q.gguf");
  assert.equal((await runCli("quantize", input, "--mode", "Q4_K_M", "-o", whole, "-q")).code, 0);
  const w = await openGguf(whole);
  const lengths = w.model.tensors.map((t) => t.byteLength);
  await w.close();
  for (const [opt, v, limits] of [["--split-max-tensors", "5", { maxTensors: 5 }], ["--split-max-size", "60000", { maxBytes: 60000 }]] as const) {
    const sub = mkdtempSync(join(dir, "s-"));
    const r = await runCli("quantize", input, "--mode", "Q4_K_M", "-o", join(sub, "q.gguf"), opt, v);
    assert.equal(r.code, 0, r.err);
    const want = splitByGgufSplit(lengths, limits).map((p) => p.length);
    const n = String(want.length).padStart(5, "0");
    assert.deepEqual(readdirSync(sub).sort(), want.map((_, i) => `q-${String(i + 1).padStart(5, "0")}-of-${n}.gguf`));
    assert.match(r.out, new RegExp(`q-00001-of-${n}\\.gguf \\.\\.\\. \\(${want.length} parts\\)`));
    assert.deepEqual(await assertSameModel(join(sub, `q-00002-of-${n}.gguf`), whole, want.length), want, opt);
  }
});

test("--no-tensor-first-split: the metadata alone in the first part", async () => {
  const sub = mkdtempSync(join(dir, "f-"));
  const r = await runCli("quantize", input, "--mode", "Q8_0", "-o", join(sub, "q.gguf"), "--split-max-tensors", "100", "--no-tensor-first-split", "-q");
  assert.equal(r.code, 0, r.err);
  const whole = join(dir, "q8.gguf");
  assert.equal((await runCli("quantize", input, "--mode", "Q8_0", "-o", whole, "-q")).code, 0);
  const counts = await assertSameModel(join(sub, "q-00001-of-00002.gguf"), whole, 2);
  assert.equal(counts[0], 0);
});

test("--keep-split: a split input's parts kept, the same model as the unsplit output", async () => {
  const parts = await writeSplitQuantModel("wide", join(dir, "in"), 6);
  const sub = mkdtempSync(join(dir, "k-"));
  const r = await runCli("quantize", parts[0]!, "--mode", "Q8_0", "--keep-split", "-o", join(sub, "q.gguf"), "-q");
  assert.equal(r.code, 0, r.err);
  const n = String(parts.length).padStart(5, "0");
  assert.equal(readdirSync(sub).length, parts.length);
  const whole = join(dir, "q8k.gguf");
  assert.equal((await runCli("quantize", input, "--mode", "Q8_0", "-o", whole, "-q", "--keep-split")).code, 0);
  // one part, named as llama-quantize names it with --keep-split
  const one = join(dir, "q8k-00001-of-00001.gguf");
  const a = await openGguf(join(sub, `q-00001-of-${n}.gguf`));
  const b = await openGguf(one);
  try {
    assert.deepEqual(a.model.files.map((f) => f.tensors.length), parts.map(() => 6).map((x, i, l) => (i < l.length - 1 ? x : a.model.tensors.length - 6 * (l.length - 1))));
    assert.deepEqual(new Set(a.model.tensors.map((t) => t.name)), new Set(b.model.tensors.map((t) => t.name)));
  } finally {
    await a.close();
    await b.close();
  }
});

test("refused: --keep-split with a split limit, both limits, sizes and counts that are not numbers", async () => {
  for (const [args, want] of [
    [["--keep-split", "--split-max-tensors", "3"], /--keep-split keeps the input's parts/],
    [["--split-max-tensors", "3", "--split-max-size", "1G"], /splits by one of them/],
    [["--split-max-size", "2GB"], /digits, optionally followed by K, M or G/],
    [["--split-max-tensors", "0"], /1 or more/],
  ] as const) {
    const r = await runCli("quantize", input, "--mode", "Q8_0", "-o", join(dir, "refused.gguf"), ...args);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.err, want);
  }
  assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith("refused")), []);
});
