/**
 * The playground in a real browser (Debian's Chromium, driven by playwright-core): the page is built
 * and served on a free port, values are typed in, and everything it shows is compared with what the
 * library returns in Node for the same inputs, across every data type and format. A screenshot is
 * saved as test-output/playground.png.
 *
 * The whole page is checked in Chromium only: it is driven through playwright's input APIs (fill,
 * selectOption, click, screenshot), and what it checks is the page's own logic, the same script in
 * every engine. In Firefox and WebKit (and Chromium again, the same way) a smoke test loads the page
 * and checks one setting of the value explorer and one cast in the tensor box against Node; what
 * may differ between engines, the library's arithmetic, is checked in all three by codecs.test.ts.
 *
 * An engine that is not installed is skipped with the reason, except under CI, where it fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { chromium, type Page } from "playwright-core";
import {
  bitcast, cast, convertPromoteTypes, decodeFloat, DTYPES, isCodedFloat, reshape, Tensor, TensorcastError,
  type DType, type RoundMode,
} from "../../src/index.js";
import { castValues } from "../../src/node/index.js";
import { chromiumLaunchOptions, ENGINE_LABEL, ENGINES, engineMissing, launch } from "./engines.js";
import { formatElement, OUTPUT, playgroundScript, type PlaygroundScript } from "./support.js";

/** Values that hit every rule: exact, ties, saturation, overflow, underflow, NaN signs, integer wrap. */
const TOKENS = [
  "1.5", "448", "464", "1000", "-1000", "0.1", "-0", "0", "nan", "-nan", "inf", "-inf", "1e-9", "2e-7", "65504",
  "65520", "3.4e38", "1e39", "240", "248", "57344", "61440", "7.75", "6.5", "0.3", "0.75", "-2.5", "3", "1.1",
  "2.999", "1e-45", "5.877471754111438e-39", "-129", "255.5", "300", "4294967296", "9007199254740993",
];

const SETTINGS: ExplorerSetting[] = [
  { from: "float64", saturate: true, roundMode: "up" },
  { from: "float64", saturate: false, roundMode: "nearest" },
  { from: "float64", saturate: true, roundMode: "down" },
  { from: "float16", saturate: false, roundMode: "up" },
  { from: "bfloat16", saturate: true, roundMode: "nearest" },
];

/** The playground, built once for this file's tests. */
let site: ReturnType<PlaygroundScript["buildPlayground"]> | undefined;

function buildSite(): ReturnType<PlaygroundScript["buildPlayground"]> {
  site ??= (async () => {
    const script = await playgroundScript();
    await mkdir(OUTPUT, { recursive: true });
    return script.buildPlayground({ out: join(OUTPUT, "playground-site") });
  })();
  return site;
}

test("the playground in Chromium shows what the library returns in Node", { timeout: 300_000 }, async (t) => {
  const missing = engineMissing("chromium");
  if (missing) {
    t.skip(missing);
    return;
  }
  const script = await playgroundScript();
  const built = await buildSite();
  t.diagnostic(`core bundle ${built.coreBytes} bytes minified, ${built.coreGzipBytes} bytes minified+gzipped`);
  const { server, url } = await script.servePlayground({ dir: built.out, port: 0 });
  const browser = await chromium.launch(chromiumLaunchOptions());
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const problems: string[] = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => { if (m.type() === "error") problems.push(`console error: ${m.text()}`); });
    await page.goto(url);
    await page.waitForSelector("body[data-ready=true]");

    await t.test("a value in every data type: the code, bits, value, errors and flag castValues gives", async () => {
      await page.fill("#values", TOKENS.join(" "));
      for (const s of SETTINGS) await checkExplorer(page, s);
    });

    await t.test("not a value, a value the source type cannot hold, an opset without the type: messages", async () => {
      await setExplorer(page, { from: "float64", saturate: true, roundMode: "up" });
      await page.fill("#values", "abc 0x10");
      const errors = await page.$$eval(".value-block", (bs) => bs.map((b) => b.querySelector("[data-error]")?.getAttribute("data-error")));
      assert.equal(errors.length, 2);
      assert.match(errors[0]!, /^"abc" is not a value; expected a decimal literal/);
      assert.match(errors[1]!, /^"0x10" is not a value/);

      await page.selectOption("#from", "float8e4m3fn");
      await page.fill("#values", "inf");
      const stored = await page.$eval(".value-block [data-error]", (e) => e.getAttribute("data-error"));
      const want = thrown(() => Tensor.fromValues([Infinity], "float8e4m3fn"));
      assert.ok(stored!.endsWith(`TensorcastError ${want.code}: ${want.message}`), stored!);

      await page.selectOption("#from", "float64");
      await page.fill("#opset", "13");
      await page.fill("#values", "1.5");
      const rows = await readExplorer(page);
      assert.equal(await page.isDisabled("#saturate"), true);
      for (const to of DTYPES) {
        const row = rows[0].rows.find((r) => r.type === to.name)!;
        let expected: TensorcastError | undefined;
        try {
          cast(Tensor.fromValues([1.5], "float64"), to, { opset: 13 });
        } catch (e) {
          expected = e as TensorcastError;
        }
        assert.equal(row.error ?? undefined, expected?.message, `${to.name} at opset 13`);
        if (expected) assert.equal(row.errorCode, expected.code);
      }
      await page.fill("#opset", "28");
    });

    await t.test("every format: its counts, every code's value, and plots that follow saturate", async () => {
      await setExplorer(page, { from: "float64", saturate: true, roundMode: "up" });
      for (const t of DTYPES.filter(isCodedFloat)) await checkFormat(page, t);
      await page.selectOption("#format", "float8e4m3fn");
      assert.equal(await page.locator("svg[data-plot=error] path.error-bad").count(), 0, "saturating e4m3fn has no NaN");
      await page.setChecked("#saturate", false);
      assert.equal(await page.locator("svg[data-plot=error] path.error-bad").count(), 1, "non-saturating e4m3fn overflows to NaN");
      await page.setChecked("#saturate", true);
      await page.click("svg[data-plot=compare] g[data-format=float4e2m1]");
      assert.equal(await page.inputValue("#format"), "float4e2m1");
    });

    await t.test("the tensor box: cast, reshape, bitcast and promote as in Node, errors as the library's", async () => {
      await checkTensorBox(page);
    });

    await t.test("screenshot: test-output/playground.png", async () => {
      await setExplorer(page, { from: "float64", saturate: true, roundMode: "up" });
      await page.fill("#values", "1000");
      await page.selectOption("#format", "float8e4m3fn");
      await setBox(page, {
        values: "1.5 448 1000 nan 0.1 -2", dtype: "float32", shape: "2 3", op: "cast",
        params: { "t-cast-to": "float8e4m3fn", "t-saturate": true, "t-round-mode": "up", "t-cast-opset": "" },
      });
      await page.locator("#values").blur();
      await page.screenshot({ path: join(OUTPUT, "playground.png"), fullPage: true });
    });

    assert.deepEqual(problems, [], "the page logged errors");
  } finally {
    await browser.close();
    server.close();
  }
});

/**
 * The smoke test, the same in every engine: the page loads without an error, one setting of the
 * value explorer shows castValues' rows for every token and type, and the tensor box shows one cast.
 */
for (const engine of ENGINES) {
  const name = ENGINE_LABEL[engine];
  test(`the playground loads in ${name}; one explorer setting and one tensor box cast show what the library returns in Node`, { timeout: 300_000 }, async (t) => {
    const missing = engineMissing(engine);
    if (missing) {
      t.skip(missing);
      return;
    }
    const script = await playgroundScript();
    const { server, url } = await script.servePlayground({ dir: (await buildSite()).out, port: 0 });
    const page = await launch(engine);
    try {
      t.diagnostic(page.version);
      await page.goto(url);
      await page.waitFor(() => (globalThis as unknown as { document: { body: { dataset: { ready?: string } } } }).document.body.dataset.ready === "true");
      const s: ExplorerSetting = { from: "float64", saturate: false, roundMode: "nearest" };
      await page.evaluate(setControls, { fields: { from: s.from, saturate: s.saturate, "round-mode": s.roundMode, values: TOKENS.join(" ") }, fire: "values" });
      assertExplorer(await page.evaluate(explorerBlocks), s);

      const x = Tensor.fromValues([1.5, 448, 1000, NaN, 0.1, -2], "float32", [2, 3]);
      const box: BoxInput = {
        values: "1.5 448 1000 nan 0.1 -2", dtype: "float32", shape: "2 3", op: "cast",
        params: { "t-cast-to": "float8e4m3fn", "t-saturate": false, "t-round-mode": "nearest", "t-cast-opset": "" },
      };
      await page.evaluate(setControls, { fields: boxFields(box), fire: "t-values" });
      assert.deepEqual(await page.evaluate(tensorShown, "t-input-table"), expectedTensor(x));
      assert.deepEqual(await page.evaluate(tensorShown, "t-output-table"), expectedTensor(cast(x, "float8e4m3fn", { saturate: false })));
      assert.deepEqual(await page.errors(), []);
    } finally {
      await page.close();
      server.close();
    }
  });
}

// ---- A value in every data type ----------------------------------------------------------------

interface PageRow {
  type: string;
  code: string;
  binary: string;
  value: string;
  abs: string;
  rel: string;
  flag: string;
  error: string | null;
  errorCode: string | null;
}

interface PageBlock {
  input: string;
  source: string;
  sourceChanged: string;
  error: string | null;
  rows: PageRow[];
}

interface ExplorerSetting {
  from: string;
  saturate: boolean;
  roundMode: RoundMode;
}

async function setExplorer(page: Page, s: ExplorerSetting): Promise<void> {
  await page.selectOption("#from", s.from);
  await page.setChecked("#saturate", s.saturate);
  await page.selectOption("#round-mode", s.roundMode);
}

async function readExplorer(page: Page): Promise<PageBlock[]> {
  return page.evaluate(explorerBlocks);
}

/** Runs in the page (any engine): the value explorer's blocks as shown. */
function explorerBlocks(): PageBlock[] {
  // The test's own types have no DOM; the slice used here is typed by hand.
  type El = { getAttribute(n: string): string | null; textContent: string | null; querySelector(s: string): El | null; querySelectorAll(s: string): Iterable<El> };
  const doc = (globalThis as unknown as { document: El }).document;
  return [...doc.querySelectorAll(".value-block")].map((b) => ({
    input: b.getAttribute("data-input") ?? "",
    source: b.getAttribute("data-source") ?? "",
    sourceChanged: b.getAttribute("data-source-changed") ?? "",
    error: b.querySelector(":scope > [data-error]")?.getAttribute("data-error") ?? null,
    rows: [...b.querySelectorAll("tr[data-type]")].map((tr) => ({
      type: tr.getAttribute("data-type") ?? "",
      code: tr.querySelector("td.code")?.textContent ?? "",
      binary: tr.querySelector("td.bits")?.textContent ?? "",
      value: tr.querySelector("td.value")?.textContent ?? "",
      abs: tr.getAttribute("data-abs") ?? "",
      rel: tr.getAttribute("data-rel") ?? "",
      flag: tr.querySelector(".flag")?.textContent ?? "",
      error: tr.getAttribute("data-error"),
      errorCode: tr.getAttribute("data-error-code"),
    })),
  }));
}

async function checkExplorer(page: Page, s: ExplorerSetting): Promise<void> {
  await setExplorer(page, s);
  assertExplorer(await readExplorer(page), s);
}

/** Every row of every value block equals the CLI's castValues for that value and type. */
function assertExplorer(blocks: PageBlock[], s: ExplorerSetting): void {
  assert.deepEqual(blocks.map((b) => b.input), TOKENS);
  const where = (i: number, to: string) => `${s.from} ${TOKENS[i]} -> ${to} (saturate=${s.saturate}, round_mode=${s.roundMode})`;
  for (const to of DTYPES) {
    if (to.kind === "complex") {
      const want = thrown(() => castValues(["1"], { from: s.from, to: to.name }));
      blocks.forEach((b, i) => {
        const row = b.rows.find((r) => r.type === to.name)!;
        assert.equal(row.error, want.message, where(i, to.name));
        assert.equal(row.errorCode, want.code, where(i, to.name));
      });
      continue;
    }
    if (to.kind === "string") {
      blocks.forEach((b, i) => {
        if (TOKENS[i].includes("nan")) return;
        const stored = Tensor.fromValues([Number(TOKENS[i].replace("inf", "Infinity"))], s.from);
        const row = b.rows.find((r) => r.type === to.name)!;
        assert.equal(row.value, JSON.stringify(cast(stored, "string").toValues()[0]), where(i, to.name));
      });
      continue;
    }
    const report = castValues(TOKENS, { from: s.from, to: to.name, saturate: s.saturate, roundMode: s.roundMode });
    report.rows.forEach((want, i) => {
      const block = blocks[i];
      assert.equal(block.error, null, where(i, to.name));
      assert.equal(block.source, want.source, where(i, "source"));
      assert.equal(block.sourceChanged, String(want.sourceChanged), where(i, "source"));
      const row = block.rows.find((r) => r.type === to.name)!;
      assert.deepEqual(
        { code: row.code, binary: row.binary, value: row.value, abs: row.abs, rel: row.rel, flag: row.flag },
        {
          code: want.code, binary: want.binary, value: want.result,
          abs: want.absError === null ? "" : String(want.absError),
          rel: want.relError === null ? "" : String(want.relError), flag: want.flag,
        },
        where(i, to.name),
      );
    });
  }
}

function thrown(f: () => unknown): TensorcastError {
  try {
    f();
  } catch (e) {
    if (e instanceof TensorcastError) return e;
    throw e;
  }
  throw new Error("expected a TensorcastError");
}

// ---- A format, all its values --------------------------------------------------------------------

/** The format view's counts and code table against the library's decoder in Node. */
async function checkFormat(page: Page, t: DType): Promise<void> {
  await page.selectOption("#format", t.name);
  const f = t.format!;
  const counts = { codes: 2 ** t.bits, finite: 0, zeros: 0, subnormal: 0, normal: 0, inf: 0, NaN: 0 };
  const positives = new Set<number>();
  const values: string[] = [];
  for (let c = 0; c < counts.codes; c++) {
    const v = decodeFloat(f, c);
    const negativeNaN = v !== v && f.signed && f.nan !== "negativeZero" && c >= 2 ** (t.bits - 1);
    values.push(v !== v ? (negativeNaN ? "-nan" : "nan") : formatElement(v));
    if (v !== v) counts.NaN++;
    else if (!Number.isFinite(v)) counts.inf++;
    else {
      counts.finite++;
      if (v === 0) counts.zeros++;
      else if (Math.floor(c / 2 ** f.manBits) % 2 ** f.expBits === 0 && f.subnormals) counts.subnormal++;
      else counts.normal++;
      if (v > 0) positives.add(v);
    }
  }
  const facts = await page.$$eval("#format-stats dd", (dds) => Object.fromEntries(dds.map((d) => [d.getAttribute("data-fact"), d.textContent])));
  for (const [k, v] of Object.entries(counts)) assert.equal(facts[k], String(v), `${t.name}: ${k}`);
  assert.equal(facts["sign|exp|man"], `${f.signed ? 1 : 0}|${f.expBits}|${f.manBits}`);
  const max = Number(t.max);
  assert.equal(facts.max, Number.isInteger(Math.log2(max)) && Math.log2(max) >= 16 ? `2^${Math.log2(max)}` : formatElement(max), `${t.name}: max`);
  assert.equal(await page.getAttribute("svg[data-plot=values]", "data-positives"), String(positives.size), `${t.name}: plotted values`);
  const errorPath = await page.getAttribute("svg[data-plot=error] path.error-line", "d");
  assert.ok(errorPath && errorPath.length > 1000, `${t.name}: the error plot has a curve`);
  assert.equal(await page.locator("svg[data-plot=compare] g[data-format]").count(), 10);
  assert.equal(await page.getAttribute("svg[data-plot=compare] g.selected", "data-format"), t.name);
  if (t.bits <= 8) {
    const cells = await page.$$eval("table.codes td", (tds) => tds.map((td) => td.getAttribute("data-value")));
    assert.deepEqual(cells, values, `${t.name}: every code's value`);
  } else {
    assert.equal(await page.locator("table.codes").count(), 0);
  }
}

// ---- The tensor box ------------------------------------------------------------------------------

interface BoxInput {
  values: string;
  dtype: string;
  shape: string;
  op: "cast" | "reshape" | "bitcast" | "promote";
  params?: Record<string, string | boolean>;
}

/**
 * Sets every control of the tensor box at once and fires one input event, as a person's last
 * keystroke would (typing field by field is exercised by the explorer above; here it would only
 * re-render the box a dozen times per case).
 */
async function setBox(page: Page, b: BoxInput): Promise<void> {
  await page.evaluate(setControls, { fields: boxFields(b), fire: "t-values" });
}

function boxFields(b: BoxInput): Record<string, string | boolean> {
  return { "t-op": b.op, "t-dtype": b.dtype, "t-shape": b.shape, ...b.params, "t-values": b.values };
}

/** Runs in the page (any engine): sets controls by id (a boolean: checked), then fires one input event on `fire`. */
function setControls({ fields, fire }: { fields: Record<string, string | boolean>; fire: string }): void {
  // The test's own types have no DOM; the slice used here is typed by hand.
  type Control = { value: string; checked: boolean; dispatchEvent(e: unknown): boolean };
  const g = globalThis as unknown as { document: { getElementById(id: string): Control | null }; Event: new (type: string, init: object) => unknown };
  const control = (id: string): Control => {
    const e = g.document.getElementById(id);
    if (!e) throw new Error(`no #${id}`);
    return e;
  };
  for (const [id, v] of Object.entries(fields)) {
    const e = control(id);
    if (typeof v === "boolean") e.checked = v;
    else if ((e.value = v) !== v) throw new Error(`#${id} does not take ${JSON.stringify(v)}`);
  }
  control(fire).dispatchEvent(new g.Event("input", { bubbles: true }));
}

interface ShownTensor {
  dtype: string;
  shape: string;
  values: string[];
  codes: string[];
}

async function shownTensor(page: Page, id: string): Promise<ShownTensor | undefined> {
  return page.evaluate(tensorShown, id);
}

/** Runs in the page (any engine): the tensor table #id as shown, or undefined if there is none. */
function tensorShown(id: string): ShownTensor | undefined {
  type El = { getAttribute(n: string): string | null; querySelectorAll(s: string): Iterable<El> };
  const e = (globalThis as unknown as { document: { getElementById(id: string): El | null } }).document.getElementById(id);
  if (!e) return undefined;
  const cells = [...e.querySelectorAll("td[data-index]")];
  return {
    dtype: e.getAttribute("data-dtype") ?? "",
    shape: e.getAttribute("data-shape") ?? "",
    values: cells.map((td) => td.getAttribute("data-value") ?? ""),
    codes: cells.map((td) => td.getAttribute("data-code") ?? ""),
  };
}

/** The tensor as the page should show it: dtype, shape, values, and each element's code from the raw bytes. */
function expectedTensor(x: Tensor): ShownTensor {
  const codes: string[] = [];
  if (x.dtype.kind !== "string" && x.dtype.kind !== "complex") {
    const bytes = x.bytes();
    const t = x.dtype;
    for (let i = 0; i < x.size; i++) {
      let code = 0n;
      if (t.packed) {
        for (let b = 0; b < t.bits; b++) {
          const bit = i * t.bits + b;
          code |= BigInt((bytes[bit >> 3] >> (bit & 7)) & 1) << BigInt(b);
        }
      } else {
        const w = t.bits / 8;
        for (let k = w - 1; k >= 0; k--) code = (code << 8n) | BigInt(bytes[i * w + k]);
      }
      codes.push(`0x${code.toString(16).padStart(Math.ceil(t.bits / 4), "0")}`);
    }
  } else {
    for (let i = 0; i < x.size; i++) codes.push("");
  }
  return { dtype: x.dtype.name, shape: JSON.stringify(x.shape), values: x.toValues().map(formatElement), codes };
}

async function checkTensorBox(page: Page): Promise<void> {
  const x = Tensor.fromValues([1.5, 448, 1000, NaN, 0.1, -2], "float32", [2, 3]);
  const values = "1.5 448 1000 nan 0.1 -2";
  const ok = async (b: BoxInput, input: Tensor, want: Tensor, note?: RegExp) => {
    await setBox(page, b);
    assert.equal(await page.locator("#t-output .error").count(), 0, `${JSON.stringify(b)}: ${await page.textContent("#t-output")}`);
    assert.deepEqual(await shownTensor(page, "t-input-table"), expectedTensor(input), `${JSON.stringify(b)}: input`);
    assert.deepEqual(await shownTensor(page, "t-output-table"), expectedTensor(want), JSON.stringify(b));
    if (note) assert.match((await page.textContent("#t-note")) ?? "", note);
  };
  const fails = async (b: BoxInput, where: "#t-input" | "#t-output", want: TensorcastError) => {
    await setBox(page, b);
    const box = page.locator(`${where} div.error`);
    assert.equal(await box.getAttribute("data-message"), want.message, JSON.stringify(b));
    assert.equal(await box.getAttribute("data-code"), want.code);
    assert.equal(await box.textContent(), `TensorcastError ${want.code}: ${want.message}`);
  };

  const base = { values, dtype: "float32", shape: "2 3" };
  for (const to of DTYPES.filter((t) => t.kind !== "complex")) {
    for (const saturate of to.format?.overflow === "saturable" ? [true, false] : [true]) {
      await ok({ ...base, op: "cast", params: { "t-cast-to": to.name, "t-saturate": saturate, "t-round-mode": "nearest", "t-cast-opset": "" } }, x,
        cast(x, to, { saturate, roundMode: "nearest" }));
    }
  }
  await fails({ ...base, op: "cast", params: { "t-cast-to": "complex64" } }, "#t-output", thrown(() => cast(x, "complex64")));
  await fails({ ...base, op: "cast", params: { "t-cast-to": "float8e4m3fn", "t-cast-opset": "13" } }, "#t-output",
    thrown(() => cast(x, "float8e4m3fn", { opset: 13 })));
  await page.fill("#t-cast-opset", "");

  await ok({ ...base, op: "reshape", params: { "t-reshape-shape": "3 -1", "t-allowzero": false, "t-reshape-opset": "" } }, x, reshape(x, [3, -1]), /zero copy/);
  await ok({ ...base, op: "reshape", params: { "t-reshape-shape": "[0, 1, -1]" } }, x, reshape(x, [0, 1, -1]));
  await fails({ ...base, op: "reshape", params: { "t-reshape-shape": "4 -1" } }, "#t-output", thrown(() => reshape(x, [4, -1])));
  await fails({ ...base, op: "reshape", params: { "t-reshape-shape": "3 -1", "t-allowzero": true, "t-reshape-opset": "13" } }, "#t-output",
    thrown(() => reshape(x, [3, -1], { allowzero: true, opset: 13 })));
  await page.setChecked("#t-allowzero", false);
  await page.fill("#t-reshape-opset", "");

  await ok({ ...base, op: "bitcast", params: { "t-bitcast-to": "uint8", "t-semantics": "tensorflow" } }, x, bitcast(x, "uint8"), /zero copy/);
  await ok({ ...base, op: "bitcast", params: { "t-bitcast-to": "int32", "t-semantics": "onnx" } }, x, bitcast(x, "int32", { semantics: "onnx" }));
  await fails({ ...base, op: "bitcast", params: { "t-bitcast-to": "complex128", "t-semantics": "tensorflow" } }, "#t-output",
    thrown(() => bitcast(x, "complex128")));
  const i4 = Tensor.fromValues([-1, 7, -8, 3], "int4");
  await ok({ values: "-1 7 -8 3", dtype: "int4", shape: "", op: "bitcast", params: { "t-bitcast-to": "uint4", "t-semantics": "onnx" } },
    i4, bitcast(i4, "uint4", { semantics: "onnx" }));

  const i8 = Tensor.fromValues([1, -2, 3], "int8");
  await ok({ values: "1 -2 3", dtype: "int8", shape: "", op: "promote", params: { "t-promote-with": "float16", "t-promote-shape": "[]", "t-promote-unsafe": false, "t-pytorch": false } },
    i8, convertPromoteTypes(i8, Tensor.zeros("float16", []))[0], /int8 \[3\] \+ float16 \[\] -> f16/);
  await fails({ values: "1 -2 3", dtype: "int32", shape: "", op: "promote", params: { "t-promote-with": "float16" } }, "#t-output",
    thrown(() => convertPromoteTypes(Tensor.fromValues([1, -2, 3], "int32"), Tensor.zeros("float16", []))));
  const i32 = Tensor.fromValues([1, -2, 3], "int32");
  await ok({ values: "1 -2 3", dtype: "int32", shape: "", op: "promote", params: { "t-promote-with": "float16", "t-promote-unsafe": true } },
    i32, convertPromoteTypes(i32, Tensor.zeros("float16", []), { promoteUnsafe: true })[0]);
  await page.setChecked("#t-promote-unsafe", false);

  // The input itself: the library refuses what a type cannot hold, in its own words.
  await fails({ values: "1.5", dtype: "int8", shape: "", op: "cast" }, "#t-input", thrown(() => Tensor.fromValues([1.5], "int8")));
  await fails({ values: "1 2 3", dtype: "float32", shape: "2 2", op: "cast" }, "#t-input", thrown(() => Tensor.fromValues([1, 2, 3], "float32", [2, 2])));
}
