// suite: full
/**
 * The playground's Hugging Face folder panel: folders made here from the committed fixtures
 * (test/fixtures/hf-gguf/llama and qwen2, one model.safetensors each, and llama cut in two shards
 * with model.safetensors.index.json) are picked in the panel's directory input as a user picks
 * them, made a GGUF in the page at an outtype (`convert DIR --to T`) or a preset (`quantize DIR
 * --mode PRESET`), and the output's bytes, captured from a stand-in for showSaveFilePicker's
 * writable and from the download link, equal those Node's CLI writes from the same folder in the
 * same test. A folder without config.json, an unknown architecture and a PyTorch .bin folder show
 * the library's TensorcastError (as the core's folder job throws it for the same files in Node);
 * axe-core finds nothing with the panel's table on show.
 *
 * In Chromium the folder is picked through the driver's own call (playwright's setInputFiles with the
 * folder's path, which sets each File's webkitRelativePath); Firefox's and WebKit's drivers take
 * files, not folders (below), so there the input is given the folder's Files as the engine's own
 * folder picking gives them (`pick`). An engine that is not installed is skipped with the reason,
 * except under CI, where it fails.
 */
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile, readdir } from "node:fs/promises";
import { basename, join } from "node:path";
import { TensorcastError } from "../../src/index.js";
import { blobFolder } from "../../src/io/hf-gguf/blob-folder.js";
import { hfTensorHeaders, planHfFolder, readHfFolderFiles } from "../../src/io/hf-gguf/folder.js";
import { bytesSource, ggufModel, readGguf } from "../../src/gguf/index.js";
import { runCli } from "../support/cli.js";
import { changedCopy, shardedCopy } from "../support/hf-folders.js";
import { HF_GGUF_DIR } from "../io/hf-gguf/fixtures.js";
import { ENGINE_LABEL, ENGINES, type EnginePage } from "./engines.js";
import { setControls, withPlaygroundPage } from "./playground-page.js";
import { fakePicker } from "./save-picker.js";
import { axeViolations, OUTPUT } from "./support.js";

/** The page as the in-page functions below use it (the tests have no DOM types). */
type G = any;

const DIR = join(OUTPUT, "playground-hf");

interface Outcome {
  state: string;
  error: string | null;
  picked: string;
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
  d.getElementById("hf-run").click();
  await g.playground.settled();
  const base64 = (b: Uint8Array): string => {
    let s = "";
    for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode(...b.subarray(i, i + 0x8000));
    return g.btoa(s);
  };
  const e = d.getElementById("hf-error");
  const out: Outcome = { state: d.getElementById("hf-gguf").dataset.state, error: e.hidden ? null : e.textContent, picked: d.getElementById("hf-picked").textContent };
  const a = d.getElementById("hf-download-link");
  out.link = a ? a.getAttribute("download") : null;
  if (d.getElementById("hf-save").value === "picker") {
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

/**
 * Picks `dir` in the panel's directory input: through the driver in Chromium; in the engines whose
 * drivers take files only, as the input holds a picked folder: its Files (made in the page from the
 * folder's bytes, each with the webkitRelativePath the engine gives a folder's files) set through a
 * DataTransfer, then the input's change event.
 */
async function pick(page: EnginePage, dir: string): Promise<void> {
  if (page.engine === "chromium") await page.setFile("#hf-folder", dir);
  else {
    const files = await Promise.all((await readdir(dir)).map(async (n) => [n, (await readFile(join(dir, n))).toString("base64")] as const));
    await page.evaluate(({ folder, files }) => {
      const g = globalThis as G;
      const input = g.document.getElementById("hf-folder");
      const dt = new g.DataTransfer();
      for (const [n, b64] of files) {
        const file = new g.File([Uint8Array.from(g.atob(b64), (c: string) => c.charCodeAt(0))], n);
        Object.defineProperty(file, "webkitRelativePath", { value: `${folder}/${n}` });
        dt.items.add(file);
      }
      input.files = dt.files;
      input.dispatchEvent(new g.Event("change", { bubbles: true }));
    }, { folder: basename(dir), files });
  }
  await page.evaluate(() => (globalThis as G).playground.settled());
}

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

/** Node's CLI on `dir`: convert --to T or quantize --mode PRESET; OUT's bytes. */
async function cli(dir: string, mode: "convert" | "quantize", target: string, out: string): Promise<Buffer> {
  const r = mode === "convert"
    ? await runCli("convert", dir, "--to", target, "-o", out, "--force", "-q")
    : await runCli("quantize", dir, "--mode", target, "-o", out, "--force", "-q");
  assert.equal(r.code, 0, r.err);
  return readFile(out);
}

/** The core's folder job in Node on `dir` read as Blobs (what the page's worker runs): the TensorcastError it throws, as the page shows one. */
async function shownFor(dir: string): Promise<string> {
  const names = await readdir(dir);
  const folder = blobFolder(basename(dir), new Map(await Promise.all(names.map(async (n) => [n, new Blob([await readFile(join(dir, n))])] as const))));
  const e = await (async () => {
    const files = await readHfFolderFiles(folder);
    const { layout } = await folder.openWeights();
    planHfFolder(files, hfTensorHeaders(layout), "auto");
  })().then(() => undefined, (x: unknown) => x);
  assert.ok(e instanceof TensorcastError, `expected a TensorcastError, got ${String(e)}`);
  return `TensorcastError ${e.code}: ${e.message}`;
}

/** The page's name for the output: the folder's, with the outtype or preset. */
const outName = (folder: string, target: string): string => `${folder}-${target.toUpperCase()}.gguf`;

const OUTTYPE_CONTROL: Readonly<Record<string, string>> = { f32: "float32", f16: "float16", bf16: "bfloat16", q8_0: "q8_0", auto: "auto" };

async function check(t: TestContext, page: EnginePage, name: string): Promise<void> {
  await mkdir(DIR, { recursive: true });
  const llama = join(HF_GGUF_DIR, "llama");
  const qwen2 = join(HF_GGUF_DIR, "qwen2");
  const sharded = shardedCopy(llama, join(DIR, "sharded", "llama"));
  const cases: [string, string, "convert" | "quantize", string, "picker" | "download"][] = [
    ["llama", llama, "convert", "f16", "picker"],
    ["llama", llama, "convert", "q8_0", "download"],
    ["llama", llama, "convert", "f32", "download"],
    ["qwen2", qwen2, "convert", "auto", "picker"],
    ["qwen2", qwen2, "convert", "bf16", "download"],
    ["llama (sharded)", sharded, "convert", "bf16", "picker"],
    ["llama", llama, "quantize", "Q4_K_M", "picker"],
    ["qwen2", qwen2, "quantize", "Q8_0", "download"],
    ["llama (sharded)", sharded, "quantize", "Q5_K_S", "download"],
  ];
  for (const [label, dir, mode, target, save] of cases) {
    await t.test(`${label} ${mode === "convert" ? `--to ${target}` : `--mode ${target}`}, ${save === "picker" ? "through showSaveFilePicker's writable" : "as a download"}: the bytes of Node's tensorcast ${mode}`, async () => {
      const folder = basename(dir);
      const want = await cli(dir, mode, target, join(DIR, `${label.replace(/\W+/g, "-")}-${target}.node.gguf`));
      await page.evaluate(fakePicker);
      await pick(page, dir);
      await page.evaluate(setControls, {
        controls: { "#hf-mode": mode, ...(mode === "convert" ? { "#hf-outtype": OUTTYPE_CONTROL[target]! } : { "#hf-preset": target }), "#hf-save": save },
      });
      const got = await page.evaluate(runPanel);
      assert.match(got.picked, new RegExp(`^${folder}/: \\d+ files\\.$`));
      if (save === "picker") {
        assert.deepEqual({ state: got.state, error: got.error, closed: got.closed, aborted: got.aborted, name: got.suggestedName, link: got.link },
          { state: "done", error: null, closed: true, aborted: false, name: outName(folder, target), link: null });
        // Written as it was made: more pieces than tensors, never one buffer.
        const tensors = ggufModel([await readGguf(bytesSource(new Uint8Array(want)), { name: "out" })]).tensors.length;
        assert.ok(got.chunks! > tensors, `${got.chunks} chunks for ${tensors} tensors`);
      } else {
        assert.deepEqual({ state: got.state, error: got.error, link: got.link }, { state: "done", error: null, link: outName(folder, target) });
      }
      assertSameBytes(got.bytes, want, `${label} ${target}`);
      // The committed golden files are convert_hf_to_gguf.py's own bytes for the one-file llama folder.
      if (dir === llama && mode === "convert") assertSameBytes(got.bytes, await readFile(join(HF_GGUF_DIR, `llama.${target}.gguf`)), `llama ${target} against the golden file`);
    });
  }

  await t.test("a folder picked through showDirectoryPicker (a stand-in handle over the same Files, with a subfolder): the bytes of Node's convert --to q8_0", async (tt) => {
    const hidden = await page.evaluate(() => (globalThis as G).document.getElementById("hf-pick").hidden as boolean);
    if (hidden) {
      tt.skip(`${name} has no showDirectoryPicker`);
      return;
    }
    const want = await cli(llama, "convert", "q8_0", join(DIR, "llama-q8_0-handle.node.gguf"));
    await pick(page, llama);
    await page.evaluate(fakePicker);
    const got = await page.evaluate(async () => {
      const g = globalThis as G;
      const d = g.document;
      const input = d.getElementById("hf-folder");
      const files = Array.from(input.files as G[]).map((f: G) => [f.name, f]);
      input.value = "";
      g.showDirectoryPicker = async () => ({
        name: "llama",
        entries: async function* () {
          yield ["snapshots", { kind: "directory" }];
          for (const [n, f] of files) yield [n, { kind: "file", getFile: async () => f }];
        },
      });
      d.getElementById("hf-pick").click();
      await g.playground.settled();
      return d.getElementById("hf-picked").textContent as string;
    });
    assert.match(got, /^llama\/: \d+ files \(and 1 subfolder, not read\)\.$/);
    await page.evaluate(setControls, { controls: { "#hf-mode": "convert", "#hf-outtype": "q8_0", "#hf-save": "picker" } });
    const out = await page.evaluate(runPanel);
    assert.deepEqual({ state: out.state, error: out.error, name: out.suggestedName }, { state: "done", error: null, name: "llama-Q8_0.gguf" });
    assertSameBytes(out.bytes, want, "llama q8_0 through the directory handle");
  });

  await t.test("a folder without config.json, an unknown architecture and a PyTorch .bin folder show the core's TensorcastError, and nothing is kept", async () => {
    const config = JSON.parse(await readFile(join(qwen2, "config.json"), "utf8")) as Record<string, unknown>;
    const bad: [string, string][] = [
      ["no config.json", changedCopy(llama, join(DIR, "bad", "no-config"), ["config.json"])],
      ["an unknown architecture", changedCopy(qwen2, join(DIR, "bad", "unknown-arch"), [], { "config.json": JSON.stringify({ ...config, architectures: ["FrobnicatorForCausalLM"] }) })],
      ["PyTorch .bin weights", changedCopy(qwen2, join(DIR, "bad", "pytorch"), ["model.safetensors"], { "pytorch_model.bin": await readFile(join(HF_GGUF_DIR, "qwen2.pytorch_model.bin")) })],
    ];
    for (const [what, dir] of bad) {
      const want = await shownFor(dir);
      for (const save of ["picker", "download"]) {
        await page.evaluate(fakePicker);
        await pick(page, dir);
        await page.evaluate(setControls, { controls: { "#hf-mode": "convert", "#hf-outtype": "auto", "#hf-save": save } });
        const got = await page.evaluate(runPanel);
        assert.equal(got.error, want, `${what}, ${save}`);
        assert.ok(!/\n\s+at /.test(got.error!), "no stack");
        assert.equal(got.state, "error");
        assert.equal(got.link, null, "no download");
        if (save === "picker") assert.deepEqual({ aborted: got.aborted, closed: got.closed }, { aborted: true, closed: false }, "the picked file is abandoned");
      }
    }
    // The words of the refusals, so a change to them is seen here.
    assert.match(await shownFor(bad[0]![1]), /^TensorcastError INVALID_DATA: no-config: has no config\.json/);
    assert.match(await shownFor(bad[2]![1]), /^TensorcastError UNSUPPORTED_TYPE: pytorch: holds PyTorch \.bin weights \(pytorch_model\.bin\), which are read by tensorcast\/node only/);
  });

  await t.test("cancel while a write is under way: the conversion ends, its file abandoned (abort, no close), nothing written after", async () => {
    await page.evaluate(() => {
      const g = globalThis as G;
      g.saved = { chunks: [], closed: false, aborted: false, release: undefined };
      // The first write waits until the test lets it go: the job is under way, deterministically.
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
    await pick(page, llama);
    await page.evaluate(setControls, { controls: { "#hf-mode": "convert", "#hf-outtype": "float16", "#hf-save": "picker" } });
    await page.evaluate(() => { (globalThis as G).document.getElementById("hf-run").click(); });
    await page.waitFor(() => (globalThis as G).saved.release !== undefined);
    const got = await page.evaluate(async () => {
      const g = globalThis as G;
      const d = g.document;
      const during = { state: d.getElementById("hf-gguf").dataset.state, cancel: d.getElementById("hf-cancel").disabled, run: d.getElementById("hf-run").disabled };
      d.getElementById("hf-cancel").click();
      await g.playground.settled();
      g.saved.release();
      await g.playground.settled();
      const e = d.getElementById("hf-error");
      return {
        during, state: d.getElementById("hf-gguf").dataset.state, error: e.hidden ? null : e.textContent, chunks: g.saved.chunks.length,
        aborted: g.saved.aborted, closed: g.saved.closed, cancel: d.getElementById("hf-cancel").disabled, run: d.getElementById("hf-run").disabled,
      };
    });
    assert.deepEqual(got, {
      during: { state: "running", cancel: false, run: true }, state: "error", error: "The conversion was cancelled: nothing was kept.",
      chunks: 1, aborted: true, closed: false, cancel: true, run: false,
    });
  });

  await t.test("axe-core finds nothing with the panel's table and download link on show", async (tt) => {
    await pick(page, llama);
    await page.evaluate(setControls, { controls: { "#hf-mode": "quantize", "#hf-preset": "Q4_K_M", "#hf-save": "download" } });
    const got = await page.evaluate(runPanel);
    assert.equal(got.state, "done");
    const rows = await page.evaluate(() => (globalThis as G).document.querySelectorAll("#hf-tensor-table tbody tr").length as number);
    assert.ok(rows > 0, "the tensor table is on show");
    const violations = await axeViolations((source) => page.evaluate<string[]>(source));
    if (violations === undefined) {
      tt.diagnostic(`${name}: axe-core not installed`);
      return;
    }
    assert.deepEqual(violations, []);
  });
}

// Firefox's driver refuses a folder (WebDriver BiDi input.setFiles: "File error: Is directory",
// NS_ERROR_FILE_IS_DIRECTORY), and WebKitWebDriver's Send Keys takes file paths only: `pick` sets
// the Files there.
for (const engine of ENGINES) {
  const name = ENGINE_LABEL[engine];
  test(`the playground in ${name}: a Hugging Face folder made a GGUF in the folder panel, the bytes of Node's tensorcast convert and quantize`, { timeout: 600_000 }, async (t) => {
    await withPlaygroundPage(t, engine, "playground-site-hf", {}, async (page, url) => {
      await page.goto(url);
      await page.waitFor(() => (globalThis as G).document.body.dataset.ready === "true");
      await check(t, page, name);
    });
  });
}
