// suite: full
/**
 * The playground's model-file panel, in every engine through engines.ts: a GGUF fixture and a
 * safetensors fixture picked in its file input as a user picks them; the metadata and tensor tables
 * equal what the library reads in Node from the same bytes; a tensor's statistics and histogram
 * equal Node's of the same values (GGUF: dequantizeGgml, bit for bit ggml's), and so does the error
 * against a float16 reference file; a truncated file shows the library's TensorcastError; axe-core
 * finds nothing with every part of the panel on show.
 *
 * An engine that is not installed is skipped with the reason, except under CI, where it fails.
 */
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cast, dequantizeGgml, formatNumber, Tensor, TensorcastError } from "../../src/index.js";
import { bytesSource, ggufModel, readGguf, readGgufBlocks } from "../../src/gguf/index.js";
import { openTensorFile } from "../../src/node/index.js";
import { encodeSafetensorsHeader } from "../../src/node/io/safetensors.js";
import { ENGINE_LABEL, ENGINES, type EnginePage } from "./engines.js";
import { setControls, withPlaygroundPage } from "./playground-page.js";
import { axeViolations, OUTPUT, ROOT } from "./support.js";

/** The page as the in-page functions below use it (the tests have no DOM types). */
type G = any;

const GGUF = join(ROOT, "test", "fixtures", "gguf", "files", "small.gguf");
const SAFETENSORS = join(ROOT, "test", "fixtures", "checkpoints", "example.safetensors");
const DIR = join(OUTPUT, "playground-files");
/** The GGUF tensor whose histogram is checked, and the reference file's float16 copy of it. */
const Q4K = "blk.3.w_q4_k";
/** The page's histogram bins and rule (playground/src/fileStats.ts), applied here to Node's values. */
const BINS = 64;
const binOf = (v: number, lo: number, hi: number): number => (hi === lo ? 0 : Math.min(BINS - 1, Math.floor(((v / 2 - lo / 2) / (hi / 2 - lo / 2)) * BINS)));

interface Expected {
  elements: number;
  min: number;
  max: number;
  mean: number;
  nan: number;
  counts: number[];
}

function statsOf(v: ArrayLike<number>): Expected {
  let min = Infinity, max = -Infinity, sum = 0, finite = 0, nan = 0;
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (Number.isNaN(x)) nan++;
    else if (Number.isFinite(x)) {
      finite++;
      sum += x;
      min = Math.min(min, x);
      max = Math.max(max, x);
    }
  }
  const counts = new Array<number>(BINS).fill(0);
  for (let i = 0; i < v.length; i++) if (Number.isFinite(v[i])) counts[binOf(v[i], min, max)]++;
  return { elements: v.length, min, max, mean: sum / finite, nan, counts };
}

/** What the page shows of the chosen tensor. */
interface Shown {
  tensor: string;
  elements: number;
  min: number;
  max: number;
  mean: number;
  nan: number;
  counts: number[];
  error?: { maxAbs: number; maxRel: number; counts: number[] };
}

/** What the page shows, its numbers parsed here from their exact spellings. */
async function shownIn(page: EnginePage): Promise<Shown | null> {
  const s = await page.evaluate(shown);
  if (!s) return null;
  const n = (x: unknown) => Number(x);
  const { error, ...rest } = s;
  return {
    ...rest, elements: n(s.elements), min: n(s.min), max: n(s.max), mean: n(s.mean), nan: n(s.nan),
    ...(error ? { error: { maxAbs: n(error.maxAbs), maxRel: n(error.maxRel), counts: error.counts } } : {}),
  };
}

/** Shown's numbers as the page spells them. */
type Spelled = Omit<Shown, "elements" | "min" | "max" | "mean" | "nan" | "error"> & {
  elements: string; min: string; max: string; mean: string; nan: string; error?: { maxAbs: string; maxRel: string; counts: number[] };
};

function shown(): Spelled | null {
  const d = (globalThis as G).document;
  // The exact spellings: JSON, which carries the answer out of the page, turns -0 into 0.
  const num = (id: string) => d.getElementById(id)?.dataset.value as string;
  const counts = (kind: string) => (d.querySelector(`svg[data-plot=${kind}]`)?.dataset.counts ?? "").split(" ").map(Number);
  const s = (globalThis as G).playground.shownStats();
  if (!s) return null;
  return {
    tensor: s.tensor, elements: num("mf-elements"), min: num("mf-min"), max: num("mf-max"), mean: num("mf-mean"), nan: num("mf-nan"), counts: counts("file-values"),
    ...(d.getElementById("mf-max-abs") ? { error: { maxAbs: num("mf-max-abs"), maxRel: num("mf-max-rel"), counts: counts("file-errors") } } : {}),
  };
}

function tables(): { meta: string[][]; tensors: string[][]; options: string[]; error: string | null } {
  const d = (globalThis as G).document;
  const rows = (id: string) => [...d.querySelectorAll(`#${id} tbody tr`)].map((r: G) => [...r.children].map((c: G) => c.textContent));
  const e = d.getElementById("mf-error");
  return { meta: rows("mf-meta-table"), tensors: rows("mf-tensor-table"), options: [...d.querySelectorAll("#mf-tensor option")].map((o: G) => o.textContent), error: e.hidden ? null : e.textContent };
}

async function pick(page: EnginePage, selector: string, path: string): Promise<void> {
  await page.setFile(selector, path);
  // The change event starts the read; settled() waits for it and the redraw it asks for.
  await page.waitFor(() => (globalThis as G).document.body.dataset.busy !== "true");
  await page.evaluate(() => (globalThis as G).playground.settled());
}

/** The float16 reference: the Q4_K tensor's values rounded to float16, as a model's source would hold them. */
async function writeReference(values: Float32Array, shape: readonly number[]): Promise<{ path: string; ref: Float64Array }> {
  const half = cast(Tensor.fromStorage(values, "float32", shape), "float16");
  const data = half.bytes();
  const header = encodeSafetensorsHeader([{ name: Q4K, dtype: half.dtype, shape, size: half.size, byteLength: data.length }]);
  const path = join(DIR, "reference.safetensors");
  await writeFile(path, Buffer.concat([header, data]));
  return { path, ref: cast(half, "float64").data as Float64Array };
}

async function check(t: TestContext, page: EnginePage, name: string): Promise<void> {
  await mkdir(DIR, { recursive: true });
  const ggufBytes = new Uint8Array(await readFile(GGUF));
  const model = ggufModel([await readGguf(bytesSource(ggufBytes), { name: "small.gguf" })]);

  await t.test("a GGUF file: its metadata and tensors as readGguf reads them in Node", async () => {
    await pick(page, "#mf-file", GGUF);
    const got = await page.evaluate(tables);
    assert.equal(got.error, null);
    const meta = [...model.metadata.values()];
    assert.deepEqual(got.meta.map((r) => r[0]), meta.map((m) => m.key));
    for (const [k, m] of meta.entries()) {
      const [, type, value] = got.meta[k];
      if (typeof m.value === "object") {
        assert.equal(type, `array[${m.value.itemType}]`, m.key);
        assert.ok(value.startsWith(`${m.value.items.length.toLocaleString("en")} ${m.value.itemType} items`), `${m.key}: ${value}`);
        const first = m.value.items[0];
        if (typeof first === "number" || typeof first === "string") assert.ok(value.includes(typeof first === "string" ? JSON.stringify(first) : String(first)), `${m.key}: ${value}`);
      } else {
        assert.equal(type, m.type, m.key);
        assert.equal(value, typeof m.value === "string" ? JSON.stringify(m.value) : String(m.value), m.key);
      }
    }
    assert.deepEqual(got.tensors, model.tensors.map((x) => [
      x.name, x.ggmlType.name, x.shape.join(" \u00d7 "), x.byteLength.toLocaleString("en"), formatNumber(x.ggmlType.bitsPerWeight),
    ]));
    assert.deepEqual(got.options, model.tensors.map((x) => x.name));
  });

  const index = model.tensors.findIndex((x) => x.name === Q4K);
  const q4k = model.tensors[index];
  const values = dequantizeGgml(q4k.ggmlType, await readGgufBlocks(model, q4k, 0, q4k.byteLength / q4k.ggmlType.typeSize));
  await t.test(`${Q4K}'s histogram, min, max and mean: those of dequantizeGgml's values in Node`, async () => {
    await page.evaluate(setControls, { controls: { "#mf-tensor": String(index) } });
    const got = await shownIn(page);
    const want = statsOf(values);
    assert.equal(got?.tensor, Q4K);
    assert.deepEqual({ ...got, tensor: undefined, error: undefined }, { ...want, tensor: undefined, error: undefined });
    assert.equal(got!.counts.reduce((a, b) => a + b, 0), q4k.elements);
  });

  await t.test("a float16 reference of the same tensor: the max abs / rel error and the error histogram as in Node", async () => {
    const { path, ref } = await writeReference(values, q4k.shape);
    await pick(page, "#mf-ref", path);
    const got = await shownIn(page);
    let maxAbs = 0, maxRel = 0, lo = Infinity, hi = -Infinity;
    for (let i = 0; i < values.length; i++) {
      const e = values[i] - ref[i];
      maxAbs = Math.max(maxAbs, Math.abs(e));
      if (ref[i] !== 0) maxRel = Math.max(maxRel, Math.abs(e) / Math.abs(ref[i]));
      lo = Math.min(lo, e);
      hi = Math.max(hi, e);
    }
    const counts = new Array<number>(BINS).fill(0);
    for (let i = 0; i < values.length; i++) counts[binOf(values[i] - ref[i], lo, hi)]++;
    assert.ok(maxAbs > 0, "float16 rounds some of the Q4_K values");
    assert.deepEqual(got?.error, { maxAbs, maxRel, counts });
  });

  await t.test("a safetensors file: __metadata__, its tensors and a tensor's histogram as tensorcast/node reads them", async () => {
    // Node's own file reader (src/node/io/reader.ts), not the page's.
    const f = await openTensorFile(SAFETENSORS);
    t.after(() => f.close());
    await pick(page, "#mf-file", SAFETENSORS);
    const got = await page.evaluate(tables);
    assert.equal(got.error, null);
    assert.deepEqual(got.meta, Object.entries(f.metadata ?? {}).map(([k, v]) => [k, "string", JSON.stringify(v)]));
    assert.deepEqual(got.tensors, f.tensors.map((x) => [x.name, x.dtype.name, x.shape.join(" \u00d7 "), x.byteLength.toLocaleString("en"), formatNumber(x.dtype.bits)]));
    for (const which of ["outliers", "layers.0.norm.weight", "position_ids"]) {
      const i = f.tensors.findIndex((x) => x.name === which);
      const x = f.tensors[i];
      const v = cast(Tensor.fromBytes(await x.read(0, x.size), x.dtype.name, [x.size]), "float64").data as Float64Array;
      await page.evaluate(setControls, { controls: { "#mf-tensor": String(i) } });
      const s = await shownIn(page);
      assert.equal(s?.tensor, which);
      // No reference tensor of this name: no error is measured.
      assert.equal(s?.error, undefined, which);
      assert.deepEqual({ ...s, tensor: undefined }, { ...statsOf(v), tensor: undefined }, which);
    }
  });

  await t.test("a tensor of 600,000 values is read in runs (no Blob slice over one run's bytes), its statistics as Node's", async () => {
    const n = 600_000;
    const v = new Float32Array(n);
    for (let i = 0; i < n; i++) v[i] = Math.sin(i * 0.001) * (i % 7) - (i % 1000 === 0 ? 1e6 : 0);
    const x = Tensor.fromStorage(v, "float32", [n]);
    const data = x.bytes();
    const path = join(DIR, "large.safetensors");
    await writeFile(path, Buffer.concat([encodeSafetensorsHeader([{ name: "big", dtype: x.dtype, shape: [n], size: n, byteLength: data.length }]), data]));
    await page.evaluate(() => {
      const g = globalThis as G;
      g.largestSlice = 0;
      const slice = g.Blob.prototype.slice;
      g.Blob.prototype.slice = function (this: G, start: number, end: number, ...rest: unknown[]) {
        g.largestSlice = Math.max(g.largestSlice, (end ?? this.size) - (start ?? 0));
        return slice.call(this, start, end, ...rest);
      };
    });
    await pick(page, "#mf-file", path);
    const largest = await page.evaluate(() => (globalThis as G).largestSlice as number);
    // The page's run: 2^18 elements (playground/src/fileStats.ts), here 4 bytes each; the file is 2.4 MB.
    assert.ok(largest > 0 && largest <= 4 * 2 ** 18, `the largest slice read ${largest} bytes`);
    assert.deepEqual({ ...(await shownIn(page)), tensor: undefined }, { ...statsOf(v), tensor: undefined });
  });

  await t.test("axe-core finds nothing with the tables, the statistics and both histograms on show", async (tt) => {
    await pick(page, "#mf-file", GGUF);
    await page.evaluate(setControls, { controls: { "#mf-tensor": String(index) } });
    assert.ok((await shownIn(page))?.error, "the error histogram is on show");
    const violations = await axeViolations((source) => page.evaluate<string[]>(source));
    if (violations === undefined) {
      tt.diagnostic(`${name}: axe-core not installed`);
      return;
    }
    assert.deepEqual(violations, []);
  });

  await t.test("a truncated GGUF shows readGguf's TensorcastError, and no uncaught error", async () => {
    const cut = ggufBytes.subarray(0, 700);
    const path = join(DIR, "truncated.gguf");
    await writeFile(path, cut);
    const e = await readGguf(bytesSource(cut), { name: "truncated.gguf" }).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof TensorcastError);
    await pick(page, "#mf-file", path);
    const got = await page.evaluate(tables);
    assert.equal(got.error, `TensorcastError ${e.code}: ${e.message}`);
    assert.deepEqual(got.tensors, []);
  });
}

for (const engine of ENGINES) {
  const name = ENGINE_LABEL[engine];
  test(`the playground in ${name}: a GGUF and a safetensors file opened in the model-file panel, read as in Node`, { timeout: 600_000 }, async (t) => {
    await withPlaygroundPage(t, engine, "playground-site-files", {}, async (page, url) => {
      await page.goto(url);
      await page.waitFor(() => (globalThis as G).document.body.dataset.ready === "true");
      await check(t, page, name);
    });
  });
}
