// suite: full
/**
 * The playground's GGUF panel: a small GGUF model made here (test/support/gguf-quant-models.ts) is
 * picked in the panel's file input as a user picks it, quantized in the page to a preset, and the
 * output's bytes, captured from a stand-in for showSaveFilePicker's writable (the chunks as the page
 * writes them) and from the download link (its Blob URL fetched in the page), equal those Node's
 * `tensorcast quantize IN.gguf --mode PRESET -o OUT.gguf` writes from the same file in the same test.
 * Bad input (a NaN weight, not a GGUF, an unknown preset, a refused requantize, an IQ preset
 * without an importance matrix) shows the library's TensorcastError, as Node throws it, and keeps nothing;
 * an importance matrix picked gives the bytes of --imatrix FILE (IQ2_XS, Q4_0, Q4_K_M); cancel ends
 * a job under way and abandons its file; axe-core finds nothing with the panel's table
 * on show.
 *
 * An engine that is not installed is skipped with the reason, except under CI, where it fails.
 */
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { TensorcastError } from "../../src/index.js";
import { bytesSource, ggufModel, readGguf } from "../../src/gguf/index.js";
import { planGgufQuantization } from "../../src/io/gguf/quantize-plan.js";
import { runCli } from "../support/cli.js";
import { ggufBytes, legacyImatrix, quantModel, writeQuantModel } from "../support/gguf-quant-models.js";
import { imatrixEntries } from "../io/gguf/quantize-cases.js";
import { quantizeGgufFile } from "../../src/node/quantize/gguf.js";
import { ENGINE_LABEL, ENGINES, type EnginePage } from "./engines.js";
import { setControls, withPlaygroundPage } from "./playground-page.js";
import { fakePicker } from "./save-picker.js";
import { axeViolations, OUTPUT } from "./support.js";

/** The page as the in-page functions below use it (the tests have no DOM types). */
type G = any;

const DIR = join(OUTPUT, "playground-gguf");

/** What a run in the page came to: its state, its error line, and the output's bytes (base64) with how they were written. */
interface Outcome {
  state: string;
  /** The band workers the job ran on, and the ones the engine's cores call for (one per core up to 8; none on one core). */
  bandWorkers?: string;
  cores?: number;
  error: string | null;
  bytes?: string;
  chunks?: number;
  suggestedName?: string;
  closed?: boolean;
  aborted?: boolean;
  link?: string | null;
}

/** In the page: runs the panel (its button clicked) and reports what came out. */
async function runPanel(): Promise<Outcome> {
  const g = globalThis as G;
  const d = g.document;
  d.getElementById("gq-run").click();
  await g.playground.settled();
  const base64 = (b: Uint8Array): string => {
    let s = "";
    for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
    return g.btoa(s);
  };
  const e = d.getElementById("gq-error");
  const section = d.getElementById("gguf-quantize");
  const cores = Math.min(8, g.navigator.hardwareConcurrency ?? 1);
  const out: Outcome = { state: section.dataset.state, error: e.hidden ? null : e.textContent, bandWorkers: section.dataset.bandWorkers, cores: cores > 1 ? cores : 0 };
  const a = d.getElementById("gq-download-link");
  out.link = a ? a.getAttribute("download") : null;
  if (d.getElementById("gq-save").value === "picker") {
    const chunks: Uint8Array[] = g.saved.chunks;
    const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of chunks) {
      all.set(c, at);
      at += c.length;
    }
    Object.assign(out, { bytes: base64(all), chunks: chunks.length, suggestedName: g.saved.name, closed: g.saved.closed, aborted: g.saved.aborted });
  } else if (a) {
    out.bytes = base64(new Uint8Array(await (await g.fetch(a.href)).arrayBuffer()));
  }
  return out;
}

async function pick(page: EnginePage, path: string): Promise<void> {
  await page.setFile("#gq-file", path);
  await page.evaluate(() => (globalThis as G).playground.settled());
}

/** Node's `tensorcast quantize IN --mode PRESET -o OUT` (and more arguments): OUT's bytes. */
async function cliQuantize(input: string, preset: string, out: string, ...more: string[]): Promise<Buffer> {
  const r = await runCli("quantize", input, "--mode", preset, "-o", out, "--force", "-q", ...more);
  assert.equal(r.code, 0, r.err);
  return readFile(out);
}

/** Where two byte strings first differ, for the message; -1 when they are equal. */
function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

function assertSameBytes(got: string | undefined, want: Uint8Array, what: string): void {
  assert.ok(got !== undefined, `${what}: no output captured`);
  const bytes = Buffer.from(got, "base64");
  const at = firstDifference(bytes, want);
  assert.equal(at, -1, `${what}: ${bytes.length} bytes against Node's ${want.length}, first difference at ${at}`);
}

/** The TensorcastError `f` throws, as the page shows one. */
async function shown(f: () => unknown): Promise<string> {
  const e = await (async () => f())().then(() => undefined, (x: unknown) => x);
  assert.ok(e instanceof TensorcastError, `expected a TensorcastError, got ${String(e)}`);
  return `TensorcastError ${e.code}: ${e.message}`;
}

async function check(t: TestContext, page: EnginePage, name: string): Promise<void> {
  await mkdir(DIR, { recursive: true });
  const wide = join(DIR, "wide.gguf");
  const deep = join(DIR, "deep.gguf");
  await writeQuantModel("wide", wide);
  await writeQuantModel("deep", deep);

  for (const [model, path, preset] of [["wide", wide, "Q4_K_M"], ["wide", wide, "Q8_0"], ["deep", deep, "Q4_K_M"]] as const) {
    await t.test(`${model} as ${preset}, written through showSaveFilePicker's writable: the bytes of Node's tensorcast quantize`, async () => {
      const want = await cliQuantize(path, preset, join(DIR, `${model}-${preset}.node.gguf`));
      await page.evaluate(fakePicker);
      await pick(page, path);
      await page.evaluate(setControls, { controls: { "#gq-preset": preset, "#gq-save": "picker", "#gq-requantize": false } });
      const got = await page.evaluate(runPanel);
      assert.deepEqual({ state: got.state, error: got.error, closed: got.closed, aborted: got.aborted, name: got.suggestedName, link: got.link },
        { state: "done", error: null, closed: true, aborted: false, name: `${model}-${preset}.gguf`, link: null });
      assertSameBytes(got.bytes, want, `${model} ${preset}`);
      assert.equal(got.bandWorkers, String(got.cores), "band workers");
      t.diagnostic(`${name}: ${got.cores} band workers`);
      // Written as it was made: a piece per tensor and its padding at least, never one buffer.
      const tensors = ggufModel([await readGguf(bytesSource(new Uint8Array(want)), { name: "out" })]).tensors.length;
      assert.ok(got.chunks! > tensors, `${got.chunks} chunks for ${tensors} tensors`);
    });
  }

  for (const [model, path, preset] of [["wide", wide, "Q8_0"], ["deep", deep, "Q5_K_S"]] as const) {
    await t.test(`${model} as ${preset}, as a download (Blob parts): the bytes of Node's tensorcast quantize`, async () => {
      const want = await cliQuantize(path, preset, join(DIR, `${model}-${preset}.node.gguf`));
      await pick(page, path);
      await page.evaluate(setControls, { controls: { "#gq-preset": preset, "#gq-save": "download", "#gq-requantize": false } });
      const got = await page.evaluate(runPanel);
      assert.deepEqual({ state: got.state, error: got.error, link: got.link }, { state: "done", error: null, link: `${model}-${preset}.gguf` });
      assertSameBytes(got.bytes, want, `${model} ${preset}`);
    });
  }

  const q8 = join(DIR, "wide-Q8_0.node.gguf");
  await t.test("a Q8_0 model requantized to Q4_K_M: refused as Node refuses it, then with allow requantize the bytes of --allow-requantize", async () => {
    const model = ggufModel([await readGguf(bytesSource(new Uint8Array(await readFile(q8))), { name: "q8" })]);
    const refused = await shown(() => planGgufQuantization(model.metadata, model.tensors, { preset: "Q4_K_M" }));
    await page.evaluate(fakePicker);
    await pick(page, q8);
    await page.evaluate(setControls, { controls: { "#gq-preset": "Q4_K_M", "#gq-save": "picker", "#gq-requantize": false } });
    const got = await page.evaluate(runPanel);
    assert.deepEqual({ state: got.state, error: got.error, aborted: got.aborted, closed: got.closed }, { state: "error", error: refused, aborted: true, closed: false });
    const want = await cliQuantize(q8, "Q4_K_M", join(DIR, "requantized.node.gguf"), "--allow-requantize");
    await page.evaluate(fakePicker);
    await page.evaluate(setControls, { controls: { "#gq-requantize": true } });
    const again = await page.evaluate(runPanel);
    assert.deepEqual({ state: again.state, error: again.error }, { state: "done", error: null });
    assertSameBytes(again.bytes, want, "requantized");
  });

  await t.test("bad input shows the library's TensorcastError (no stack) and keeps nothing: a NaN weight, not a GGUF, an unknown preset, IQ2_XXS without an importance matrix", async () => {
    const notGguf = join(DIR, "not-a-model.gguf");
    const junk = new TextEncoder().encode("this is not a GGUF file, only some text in one\n".repeat(4));
    await writeFile(notGguf, junk);
    const wideModel = ggufModel([await readGguf(bytesSource(new Uint8Array(await readFile(wide))), { name: "wide" })]);
    // A NaN in a weight: refused by a band worker (ggml_validate_row_data's check), its error through two workers.
    const nan = join(DIR, "nan.gguf");
    const { metadata, tensors } = quantModel("wide");
    const q = tensors.findIndex((x) => x.name === "blk.1.attn_q.weight");
    const data = (tensors[q]!.data as Uint8Array).slice();
    new DataView(data.buffer).setUint16(2 * 1000, 0x7e00, true);
    tensors[q] = { ...tensors[q]!, data };
    await writeFile(nan, await ggufBytes(metadata, tensors));
    const cases: [string, string, string][] = [
      [nan, "Q4_K_M", await shown(() => quantizeGgufFile(nan, join(DIR, "never.gguf"), { preset: "Q4_K_M", force: true }))],
      [notGguf, "Q4_K_M", await shown(() => readGguf(bytesSource(junk), { name: "not-a-model.gguf" }))],
      [wide, "Q9_Z", await shown(() => planGgufQuantization(wideModel.metadata, wideModel.tensors, { preset: "Q9_Z" }))],
      [wide, "IQ2_XXS", await shown(() => planGgufQuantization(wideModel.metadata, wideModel.tensors, { preset: "IQ2_XXS" }))],
    ];
    for (const [path, preset, want] of cases) {
      for (const save of ["picker", "download"]) {
        await page.evaluate(fakePicker);
        await pick(page, path);
        await page.evaluate(setControls, { controls: { "#gq-preset": preset, "#gq-save": save, "#gq-requantize": false } });
        const got = await page.evaluate(runPanel);
        assert.equal(got.error, want, `${path} ${preset} ${save}`);
        assert.ok(!/\n\s+at /.test(got.error!), "no stack");
        assert.equal(got.state, "error");
        assert.equal(got.link, null, "no download");
        if (save === "picker") assert.deepEqual({ aborted: got.aborted, closed: got.closed, chunks: got.chunks }, { aborted: true, closed: false, chunks: got.chunks }, "the picked file is abandoned");
      }
    }
  });

  await t.test("a save picker the browser refuses (a SecurityError) is said so, with the download way offered, and no uncaught error", async () => {
    await page.evaluate(() => {
      const g = globalThis as G;
      g.showSaveFilePicker = async () => { throw new g.DOMException("Must be handling a user gesture to show a file picker.", "SecurityError"); };
    });
    await pick(page, wide);
    await page.evaluate(setControls, { controls: { "#gq-preset": "Q8_0", "#gq-save": "picker", "#gq-requantize": false } });
    const got = await page.evaluate(async () => {
      const g = globalThis as G;
      const d = g.document;
      d.getElementById("gq-run").click();
      await g.playground.settled();
      const e = d.getElementById("gq-error");
      return { state: d.getElementById("gguf-quantize").dataset.state, error: e.hidden ? null : e.textContent, run: d.getElementById("gq-run").disabled };
    });
    assert.deepEqual(got, {
      state: "error", run: false,
      error: "The browser refused its save picker (SecurityError: Must be handling a user gesture to show a file picker.); choose \"a download\" to save the output instead.",
    });
  });

  await t.test("cancel while a write is under way: the job ends, its file abandoned (abort, no close), nothing written after", async () => {
    await page.evaluate(() => {
      const g = globalThis as G;
      g.saved = { chunks: [], closed: false, aborted: false };
      // The first write waits until the test lets it go: the job is under way, deterministically.
      g.saved.release = undefined;
      g.showSaveFilePicker = async () => ({
        createWritable: async () => ({
          write: (d: G) => new Promise<void>((resolve) => {
            if (g.saved.closed || g.saved.aborted) throw new Error("written after close or abort");
            g.saved.chunks.push(new Uint8Array(d).slice());
            g.saved.release = resolve;
          }),
          close: async () => { g.saved.closed = true; },
          abort: async () => { g.saved.aborted = true; },
        }),
      });
    });
    await pick(page, wide);
    await page.evaluate(setControls, { controls: { "#gq-preset": "Q4_K_M", "#gq-save": "picker", "#gq-requantize": false } });
    await page.evaluate(() => { (globalThis as G).document.getElementById("gq-run").click(); });
    await page.waitFor(() => (globalThis as G).saved.release !== undefined);
    const got = await page.evaluate(async () => {
      const g = globalThis as G;
      const d = g.document;
      const during = { state: d.getElementById("gguf-quantize").dataset.state, cancel: d.getElementById("gq-cancel").disabled, run: d.getElementById("gq-run").disabled };
      d.getElementById("gq-cancel").click();
      await g.playground.settled();
      g.saved.release();
      await g.playground.settled();
      const e = d.getElementById("gq-error");
      return {
        during, state: d.getElementById("gguf-quantize").dataset.state, error: e.hidden ? null : e.textContent, chunks: g.saved.chunks.length,
        aborted: g.saved.aborted, closed: g.saved.closed, cancel: d.getElementById("gq-cancel").disabled, run: d.getElementById("gq-run").disabled,
      };
    });
    assert.deepEqual(got, {
      during: { state: "running", cancel: false, run: true }, state: "error", error: "The quantization was cancelled: nothing was kept.",
      chunks: 1, aborted: true, closed: false, cancel: true, run: false,
    });
  });

  await t.test("with an importance matrix (a legacy .dat) picked: IQ2_XS, Q4_0 and Q4_K_M are the bytes of --imatrix FILE", async () => {
    const name = "wide.imatrix.dat";
    await writeFile(join(DIR, name), legacyImatrix(imatrixEntries("wide")));
    for (const preset of ["IQ2_XS", "Q4_0", "Q4_K_M"]) {
      // The output stores the imatrix path as given (quantize.imatrix.file): the CLI is given the file's name, as the page has it.
      const before = process.cwd();
      process.chdir(DIR);
      let want: Buffer;
      try {
        want = await cliQuantize("wide.gguf", preset, `wide-${preset}-imatrix.node.gguf`, "--imatrix", name);
      } finally {
        process.chdir(before);
      }
      await pick(page, wide);
      await page.setFile("#gq-imatrix", join(DIR, name));
      await page.evaluate(setControls, { controls: { "#gq-preset": preset, "#gq-save": "download", "#gq-requantize": false } });
      const got = await page.evaluate(runPanel);
      assert.deepEqual({ state: got.state, error: got.error }, { state: "done", error: null }, preset);
      assertSameBytes(got.bytes, want, `${preset} with ${name}`);
    }
    await page.evaluate(() => { (globalThis as G).document.getElementById("gq-imatrix").value = ""; });
  });

  await t.test("axe-core finds nothing with the panel's table and download link on show", async (tt) => {
    await pick(page, wide);
    await page.evaluate(setControls, { controls: { "#gq-preset": "Q4_K_M", "#gq-save": "download", "#gq-requantize": false } });
    const got = await page.evaluate(runPanel);
    assert.equal(got.state, "done");
    const rows = await page.evaluate(() => (globalThis as G).document.querySelectorAll("#gq-tensor-table tbody tr").length as number);
    assert.ok(rows > 0, "the tensor table is on show");
    const violations = await axeViolations((source) => page.evaluate<string[]>(source));
    if (violations === undefined) {
      tt.diagnostic(`${name}: axe-core not installed`);
      return;
    }
    assert.deepEqual(violations, []);
  });
}

for (const engine of ENGINES) {
  const name = ENGINE_LABEL[engine];
  test(`the playground in ${name}: a GGUF model quantized in the GGUF panel, the bytes of Node's tensorcast quantize`, { timeout: 600_000 }, async (t) => {
    await withPlaygroundPage(t, engine, "playground-site-gguf", {}, async (page, url) => {
      await page.goto(url);
      await page.waitFor(() => (globalThis as G).document.body.dataset.ready === "true");
      await check(t, page, name);
    });
  });
}
