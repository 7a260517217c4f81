/**
 * PyTorch checkpoints read back as torch reads them: every dtype and layout of the fixtures
 * (test/fixtures/pytorch/make.py, torch 2.13 as the oracle) in both containers equals
 * torch.load(weights_only=True)'s tensors byte for byte; the allow-list is torch's own; hostile
 * files are INVALID_DATA naming what they tried, and nothing they name is run.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { TensorcastError } from "../../src/index.js";
import { openTensorFile } from "../../src/node/index.js";
import { allowedGlobals } from "../../src/io/pytorch/allowed-globals.js";
import { readPickle, type PickleHooks } from "../../src/io/pytorch/pickle.js";
import { rebuildHooks } from "../../src/io/pytorch/rebuild.js";
import { ROOT } from "./helpers.js";

const DIR = join(ROOT, "test", "fixtures", "pytorch");

/** torch dtype name -> tensorcast's. */
const NAMES: Record<string, string> = {
  float8_e4m3fn: "float8e4m3fn", float8_e5m2: "float8e5m2", float8_e4m3fnuz: "float8e4m3fnuz",
  float8_e5m2fnuz: "float8e5m2fnuz", float8_e8m0fnu: "float8e8m0",
};

type Expected = Record<string, { dtype: string; shape: number[]; hex: string }>;

async function readAll(path: string, key?: string): Promise<Map<string, { dtype: string; shape: number[]; hex: string }>> {
  const f = await openTensorFile(path, { pytorch: { key } });
  try {
    const out = new Map<string, { dtype: string; shape: number[]; hex: string }>();
    for (const t of f.tensors) {
      // Read in runs of 7 elements (and one whole read), so a run starting mid-row is exercised.
      const parts: Uint8Array[] = [];
      for (let s = 0; s < t.size; s += 7) parts.push(await t.read(s, Math.min(7, t.size - s)));
      const joined = Buffer.concat(parts);
      assert.deepEqual(joined, Buffer.from(await t.read(0, t.size)), `${t.name}: runs and one read agree`);
      out.set(t.name, { dtype: t.dtype.name, shape: [...t.shape], hex: joined.toString("hex") });
    }
    return out;
  } finally {
    await f.close();
  }
}

for (const name of ["dtypes", "dtypes.legacy", "layouts", "layouts.legacy", "bigendian"]) {
  test(`${name}.pt reads back equal to torch.load's tensors, byte for byte`, async () => {
    const expected = JSON.parse(readFileSync(join(DIR, `${name}.expected.json`), "utf8")) as Expected;
    const got = await readAll(join(DIR, `${name}.pt`));
    assert.deepEqual([...got.keys()].sort(), Object.keys(expected).sort());
    for (const [k, e] of Object.entries(expected)) {
      const g = got.get(k)!;
      assert.equal(g.dtype, NAMES[e.dtype] ?? e.dtype, k);
      assert.deepEqual(g.shape, e.shape, k);
      assert.equal(g.hex, e.hex, k);
    }
  });
}

test("the fixtures cover every dtype torch saves and tensorcast reads, and every layout", () => {
  const d = JSON.parse(readFileSync(join(DIR, "dtypes.expected.json"), "utf8")) as Expected;
  assert.deepEqual(new Set(Object.values(d).map((t) => t.dtype)).size, 18);
  const l = JSON.parse(readFileSync(join(DIR, "layouts.expected.json"), "utf8")) as Expected;
  assert.deepEqual(l.scalar.shape, []);
  assert.deepEqual(l.empty.shape, [0, 3]);
  assert.deepEqual(l.transposed.shape, [8, 6]);
});

test("a state dict nested under a key: --key picks it; without it the error lists the keys", async () => {
  const expected = JSON.parse(readFileSync(join(DIR, "nested.expected.json"), "utf8")) as Expected;
  const got = await readAll(join(DIR, "nested.pt"), "model");
  for (const [k, e] of Object.entries(expected)) assert.equal(got.get(k)!.hex, e.hex, k);
  await assert.rejects(openTensorFile(join(DIR, "nested.pt")), (e: unknown) => {
    assert.ok(e instanceof TensorcastError && e.code === "INVALID_ATTRIBUTE");
    assert.match(e.message, /"model" \(a state dict of 2 tensors\), "epoch" \(3\), "optimizer"/);
    assert.match(e.message, /--key/);
    return true;
  });
  await assert.rejects(openTensorFile(join(DIR, "nested.pt"), { pytorch: { key: "weights" } }), /has no key "weights"; its keys are "model"/);
});

test("complex tensors torch saves (complex32 / 64 / 128, zip and legacy) are UNSUPPORTED_TYPE naming the tensor, its type and the types read", async () => {
  const files = readdirSync(join(DIR, "unsupported")).sort();
  assert.deepEqual(files, ["complex128.legacy.pt", "complex128.pt", "complex32.pt", "complex64.legacy.pt", "complex64.pt"]);
  for (const file of files) {
    await assert.rejects(openTensorFile(join(DIR, "unsupported", file)), (e: unknown) => {
      assert.ok(e instanceof TensorcastError, `${file}: ${String(e)}`);
      assert.equal(e.code, "UNSUPPORTED_TYPE", `${file}: ${e.message}`);
      assert.match(e.message, new RegExp(`tensor "c": torch\\.${file.split(".")[0]}: complex tensors are not read; the types read are float64, float32, .*bool`));
      return true;
    });
  }
});

test("the allow-list is exactly torch.load(weights_only=True)'s", () => {
  const torchs = JSON.parse(readFileSync(join(DIR, "allowed-globals.json"), "utf8")) as string[];
  assert.deepEqual(allowedGlobals(), [...torchs].sort());
});

test("hostile checkpoints are INVALID_DATA naming the global or record, and nothing is run", async () => {
  const expected = JSON.parse(readFileSync(join(DIR, "hostile", "expected.json"), "utf8")) as Record<string, string>;
  assert.ok(Object.keys(expected).length >= 15);
  for (const [file, fragment] of Object.entries(expected)) {
    await assert.rejects(openTensorFile(join(DIR, "hostile", file)), (e: unknown) => {
      assert.ok(e instanceof TensorcastError, `${file}: ${String(e)}`);
      assert.equal(e.code, "INVALID_DATA", `${file}: ${e.message}`);
      assert.ok(e.message.includes(fragment), `${file}: ${e.message} should name ${fragment}`);
      return true;
    });
  }
});

test("a GLOBAL outside the allow-list never reaches the hooks: REDUCE of os.system calls nothing", () => {
  const calls: string[] = [];
  const base = rebuildHooks(() => {
    throw new Error("no storage");
  });
  const hooks: PickleHooks = { ...base, call: (fn, args) => (calls.push(fn), base.call(fn, args)) };
  const pkl = Buffer.concat([Buffer.from([0x80, 2]), Buffer.from("cos\nsystem\n"), Buffer.from([0x58, 2, 0, 0, 0]), Buffer.from("ls"), Buffer.from([0x85, 0x52, 0x2e])]);
  assert.throws(() => readPickle(pkl, "p", hooks), /GLOBAL "os\.system" is in the blocked module os; nothing was executed/);
  assert.deepEqual(calls, []);
});

test("pickle edge cases: memo, big ints, dict key equality, marks", () => {
  const hooks = rebuildHooks(() => {
    throw new Error("no storage");
  });
  // {1: "a", True: "b"} is one key in Python (True == 1), keeping the first key and the last value.
  const pkl = Buffer.from([0x80, 2, 0x7d, 0x28, 0x4b, 1, 0x58, 1, 0, 0, 0, 0x61, 0x88, 0x58, 1, 0, 0, 0, 0x62, 0x75, 0x2e]);
  const v = readPickle(pkl, "p", hooks).value as { type: "dict"; entries: Map<string, [unknown, unknown]> };
  assert.deepEqual([...v.entries.values()], [[1, "b"]]);
  // LONG1 past 2^53 is a bigint; -1 is one byte 0xff.
  const big = readPickle(Buffer.from([0x80, 2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x2e]), "p", hooks).value;
  assert.equal(big, 1n << 64n);
  assert.equal(readPickle(Buffer.from([0x80, 2, 0x8a, 1, 0xff, 0x2e]), "p", hooks).value, -1);
  assert.throws(() => readPickle(Buffer.from([0x80, 2, 0x74, 0x2e]), "p", hooks), /MARK that was never set/);
  assert.throws(() => readPickle(Buffer.from([0x80, 2, 0x5d, 0x5d, 0x71, 0, 0x61, 0x68, 1, 0x2e]), "p", hooks), /BINGET 1 refers to a memo entry that was never stored/);
  assert.throws(() => readPickle(Buffer.from([0x80, 2, 0x5d, 0x5d, 0x5d, 0x73, 0x2e]), "p", hooks), /SETITEM targets list/);
  assert.throws(() => readPickle(Buffer.from([0x80, 2, 0x7d, 0x5d, 0x4e, 0x73, 0x2e]), "p", hooks), /uses list as a dict key/);
  const deep = Buffer.concat([Buffer.from([0x80, 2]), Buffer.alloc(2000, 0x28), Buffer.from([0x2e])]);
  assert.throws(() => readPickle(deep, "p", hooks), /MARKs nest more than 1000 deep/);
});

test("a legacy file of a type torch keeps there as an UntypedStorage (float8, uint16; torch.load cannot read it either) is INVALID_DATA saying so", async () => {
  for (const file of ["float8_e4m3fn.legacy.pt", "uint16.legacy.pt"]) {
    await assert.rejects(openTensorFile(join(DIR, "untyped", file)), (e: unknown) => {
      assert.ok(e instanceof TensorcastError && e.code === "INVALID_DATA", `${file}: ${String(e)}`);
      assert.match(e.message, /an UntypedStorage in the legacy format, which torch\.load cannot read either/);
      return true;
    });
  }
  const hooks = rebuildHooks(() => {
    throw new Error("no storage");
  });
  // TUPLE1 on an empty stack (the full fuzz class found a mutant without this check; its everyday size did not).
  assert.throws(() => readPickle(Buffer.from([0x80, 2, 0x85, 0x2e]), "p", hooks), /pops from an empty stack/);
});
