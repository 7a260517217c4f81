// suite: full
/**
 * The playground's quantize and dequantize (issue 25 point 5), in every engine through engines.ts:
 * the tensor box quantizes a typed tensor per tensor, per axis and blocked, and its codes (and the
 * codes dequantized back) equal quantizeLinear's and dequantizeLinear's in Node bit for bit, with
 * scales and zero points built here with explicit shapes (so the page's derived shapes are checked,
 * not repeated); typed codes dequantize as in Node; scales of the wrong shape show the library's
 * SHAPE_MISMATCH; at 390 px the controls stack inside the window; axe-core finds nothing in the
 * light theme (every engine) and the dark one (Chromium, Firefox).
 *
 * An engine that is not installed is skipped with the reason, except under CI, where it fails.
 */
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import {
  dequantizeLinear, elementCode, formatHex, quantizeLinear, quantizeOperatorVersion, Tensor, type DequantizeOptions, type QuantizeOptions,
} from "../../src/index.js";
import { COLOR_SCHEME_ENGINES, ENGINE_LABEL, ENGINES, type EnginePage } from "./engines.js";
import { setControls, withPlaygroundPage } from "./playground-page.js";
import { axeViolations } from "./support.js";

/** The page as the in-page functions below use it (the tests have no DOM types). */
type G = any;

/** 24 float32 values, shape [4, 6]: ties at 0.05 (0.025, 0.075, 2.5), both ends, +-inf, NaN, tiny values. */
const VALUES = "0 0.025 0.075 -0.025 1.5 -1.5 6.35 -6.4 100 -100 inf -inf nan 3.14159 0.125 -0.375 1e-8 -1e-8 2.5 -2.5 448 -448 0.0499 7";
const SHAPE = [4, 6];
// Number("inf") is NaN: the literals the page reads, spelled for Node.
const X = Tensor.fromValues(VALUES.split(" ").map((s) => (s === "inf" ? Infinity : s === "-inf" ? -Infinity : Number(s))), "float32", SHAPE);

interface Case {
  readonly name: string;
  readonly scale: readonly number[];
  readonly scaleType: string;
  /** The shape the page must derive from the list. */
  readonly scaleShape: readonly number[];
  readonly zeroPoint?: readonly number[];
  readonly axis: number;
  readonly blockSize: number;
  readonly output: string;
  readonly saturate: boolean;
  /** What the page says of the scale's shape. */
  readonly how: string;
}

const CASES: readonly Case[] = [
  { name: "per tensor, int8", scale: [0.05], scaleType: "float32", scaleShape: [], axis: 1, blockSize: 0, output: "int8", saturate: true, how: "scale float32 [] (per tensor)" },
  { name: "per tensor, uint8 with zero point 128, float16 scale", scale: [0.05], scaleType: "float16", scaleShape: [], zeroPoint: [128], axis: 1, blockSize: 0, output: "uint8", saturate: true, how: "scale float16 [] (per tensor); zero point uint8 [] (per tensor)" },
  { name: "per tensor, float8e4m3fn, saturate off", scale: [0.5], scaleType: "float32", scaleShape: [], axis: 1, blockSize: 0, output: "float8e4m3fn", saturate: false, how: "scale float32 [] (per tensor)" },
  { name: "per axis 1, int8 zero points", scale: [0.01, 0.05, 0.1, 0.5, 1, 2], scaleType: "float32", scaleShape: [6], zeroPoint: [0, 1, -1, 5, -5, 127], axis: 1, blockSize: 0, output: "int8", saturate: true, how: "scale float32 [6] (per axis 1); zero point int8 [6] (per axis 1)" },
  { name: "per axis -2, uint4 zero points", scale: [0.5, 1, 4, 100], scaleType: "bfloat16", scaleShape: [4], zeroPoint: [1, 2, 3, 15], axis: -2, blockSize: 0, output: "uint4", saturate: true, how: "scale bfloat16 [4] (per axis 0)" },
  { name: "blocked along axis 1 (block 4, the last partial), int4", scale: [0.01, 0.1, 0.5, 1, 2, 4, 8, 16], scaleType: "float32", scaleShape: [4, 2], axis: 1, blockSize: 4, output: "int4", saturate: true, how: "scale float32 [4, 2] (blocked along axis 1: ceil(6 / 4) = 2 blocks)" },
  { name: "MX: float8e8m0 scales, float4e2m1, blocked along axis 1", scale: [0.5, 1, 2, 4, 0.25, 8, 16, 0.125], scaleType: "float8e8m0", scaleShape: [4, 2], axis: 1, blockSize: 4, output: "float4e2m1", saturate: true, how: "scale float8e8m0 [4, 2] (blocked along axis 1" },
  { name: "blocked along axis 0 (block 3), float8e5m2 without saturation", scale: [0.001, 0.01, 0.1, 1, 10, 100, 0.5, 0.25, 2, 4, 8, 1e-5], scaleType: "float32", scaleShape: [2, 6], axis: 0, blockSize: 3, output: "float8e5m2", saturate: false, how: "scale float32 [2, 6] (blocked along axis 0: ceil(4 / 3) = 2 blocks)" },
];

/** What Node gives for a case: the tensors built with explicit shapes, the library called directly. */
function inNode(c: Case): { y: Tensor; back: Tensor; scale: Tensor; zeroPoint?: Tensor } {
  const scale = Tensor.fromValues([...c.scale], c.scaleType, c.scaleShape);
  const zeroPoint = c.zeroPoint ? Tensor.fromValues([...c.zeroPoint], c.output, c.scaleShape) : undefined;
  const q: QuantizeOptions = { axis: c.axis, blockSize: c.blockSize, saturate: c.saturate, ...(zeroPoint ? {} : { outputDtype: c.output }) };
  const y = quantizeLinear(X, scale, zeroPoint, q);
  const d: DequantizeOptions = { axis: c.axis, blockSize: c.blockSize, ...(c.scaleType === "float8e8m0" ? { outputDtype: "float32" } : {}) };
  return { y, back: dequantizeLinear(y, scale, zeroPoint, d), scale, ...(zeroPoint ? { zeroPoint } : {}) };
}

const codes = (x: Tensor) => Array.from({ length: x.size }, (_, i) => formatHex(elementCode(x, i), x.dtype));

interface Shown {
  dtype: string | null;
  shape: string | null;
  codes: string[];
}

class Page {
  constructor(readonly page: EnginePage, readonly url: string) {}

  async open(): Promise<void> {
    await this.page.goto("about:blank");
    await this.page.goto(this.url);
    await this.page.waitFor(() => (globalThis as G).document.body.dataset.ready === "true");
  }

  /** Sets controls (a boolean: checked), firing input on each, then waits for the redraws. */
  async set(controls: Record<string, string | boolean>): Promise<void> {
    await this.page.evaluate(setControls, { controls });
  }

  /** A table's type, shape and every element's code, as the page shows them. */
  table(id: string): Promise<Shown> {
    return this.page.evaluate((id) => {
      const t = (globalThis as G).document.getElementById(id);
      if (!t) return { dtype: null, shape: null, codes: [] };
      return { dtype: t.dataset.dtype, shape: t.dataset.shape, codes: [...t.querySelectorAll("td[data-index]")].map((c: G) => c.dataset.code) };
    }, id);
  }

  text(selector: string): Promise<string | null> {
    return this.page.evaluate((sel) => (globalThis as G).document.querySelector(sel)?.textContent ?? null, selector);
  }

  /** The error box in #t-output: its code and message. */
  outputError(): Promise<{ code?: string; message?: string } | null> {
    return this.page.evaluate(() => {
      const e = (globalThis as G).document.querySelector("#t-output div.error");
      return e ? { code: e.dataset.code, message: e.dataset.message } : null;
    });
  }

  /** The case's controls. */
  async quantize(c: Case): Promise<void> {
    await this.set({
      "#t-op": "quantize", "#t-q-scale": c.scale.join(" "), "#t-q-scale-type": c.scaleType, "#t-q-zero-point": c.zeroPoint?.join(" ") ?? "",
      "#t-q-axis": String(c.axis), "#t-q-block-size": String(c.blockSize), "#t-q-output": c.output, "#t-q-saturate": c.saturate, "#t-q-opset": "",
    });
  }
}

function withPage(t: TestContext, engine: (typeof ENGINES)[number], options: { colorScheme?: "light" | "dark" }, body: (p: Page) => Promise<void>): Promise<void> {
  return withPlaygroundPage(t, engine, "playground-site-quant", options, async (page, url) => {
    const p = new Page(page, url);
    await p.open();
    await body(p);
  });
}

async function quantizeCases(p: Page, t: TestContext): Promise<void> {
  await p.set({ "#t-dtype": "float32", "#t-shape": SHAPE.join(" "), "#t-values": VALUES });
  for (const c of CASES) {
    await p.quantize(c);
    const node = inNode(c);
    const error = await p.outputError();
    assert.equal(error, null, `${c.name}: ${JSON.stringify(error)}`);
    const y = await p.table("t-output-table");
    assert.deepEqual(y, { dtype: c.output, shape: JSON.stringify(SHAPE), codes: codes(node.y) }, `${c.name}: the codes`);
    const back = await p.table("t-back-table");
    assert.deepEqual(back, { dtype: node.back.dtype.name, shape: JSON.stringify(SHAPE), codes: codes(node.back) }, `${c.name}: dequantized back`);
    const note = (await p.text("#t-q-note")) ?? "";
    assert.ok(note.startsWith(`QuantizeLinear-${quantizeOperatorVersion("QuantizeLinear", 28).version}: `) && note.includes(c.how), `${c.name}: the shapes note ${JSON.stringify(note)}`);
    t.diagnostic(`${c.name}: ${node.y.size} codes as in Node; ${note}`);
  }
}

/** The codes typed back in as the input, with the same scale: dequantize gives Node's values. */
async function dequantizeTyped(p: Page, t: TestContext): Promise<void> {
  for (const c of CASES.filter((c) => ["int8", "int4", "uint4"].includes(c.output))) {
    const node = inNode(c);
    await p.quantize(c);
    await p.set({ "#t-dtype": c.output, "#t-values": (node.y.toValues() as number[]).join(" "), "#t-op": "dequantize", "#t-q-deq-output": "" });
    const error = await p.outputError();
    assert.equal(error, null, `${c.name}: ${JSON.stringify(error)}`);
    const expected = dequantizeLinear(node.y, node.scale, node.zeroPoint, { axis: c.axis, blockSize: c.blockSize });
    assert.deepEqual(await p.table("t-input-table"), { dtype: c.output, shape: JSON.stringify(SHAPE), codes: codes(node.y) }, `${c.name}: the typed codes`);
    assert.deepEqual(await p.table("t-output-table"), { dtype: expected.dtype.name, shape: JSON.stringify(SHAPE), codes: codes(expected) }, `${c.name}: dequantized`);
    // An output_dtype of its own (23+).
    await p.set({ "#t-q-deq-output": "bfloat16" });
    const bf16 = dequantizeLinear(node.y, node.scale, node.zeroPoint, { axis: c.axis, blockSize: c.blockSize, outputDtype: "bfloat16" });
    assert.deepEqual((await p.table("t-output-table")).codes, codes(bf16), `${c.name}: dequantized to bfloat16`);
    assert.equal(await p.page.evaluate(() => (globalThis as G).document.getElementById("t-back-box").hidden), true, "no way back for dequantize");
    t.diagnostic(`${c.name}: ${expected.size} values dequantized as in Node`);
    await p.set({ "#t-q-deq-output": "", "#t-dtype": "float32", "#t-values": VALUES });
  }
}

/** Scales and zero points of the wrong shape: the library's SHAPE_MISMATCH, word for word. */
async function badShapes(p: Page, t: TestContext): Promise<void> {
  await p.set({ "#t-dtype": "float32", "#t-shape": SHAPE.join(" "), "#t-values": VALUES, "#t-op": "quantize", "#t-q-output": "int8", "#t-q-opset": "" });
  const bad: [string, Record<string, string>, () => unknown][] = [
    ["4 scales along axis 1 (6 long)", { "#t-q-scale": "1 2 3 4", "#t-q-zero-point": "", "#t-q-axis": "1", "#t-q-block-size": "0" },
      () => quantizeLinear(X, Tensor.fromValues([1, 2, 3, 4], "float32", [4]), undefined, { axis: 1, blockSize: 0, outputDtype: "int8" })],
    ["5 scales for blocks of 4 along axis 1 (needs 8)", { "#t-q-scale": "1 2 3 4 5", "#t-q-axis": "1", "#t-q-block-size": "4" },
      () => quantizeLinear(X, Tensor.fromValues([1, 2, 3, 4, 5], "float32", [5]), undefined, { axis: 1, blockSize: 4, outputDtype: "int8" })],
    ["6 scales, 2 zero points", { "#t-q-scale": "1 2 3 4 5 6", "#t-q-zero-point": "1 2", "#t-q-block-size": "0" },
      () => quantizeLinear(X, Tensor.fromValues([1, 2, 3, 4, 5, 6], "float32", [6]), Tensor.fromValues([1, 2], "int8", [2]), { axis: 1, blockSize: 0 })],
    ["a nested [2, 3] scale without a block size", { "#t-q-scale": "[[1, 2, 3], [4, 5, 6]]", "#t-q-zero-point": "" },
      () => quantizeLinear(X, Tensor.fromValues([1, 2, 3, 4, 5, 6], "float32", [2, 3]), undefined, { axis: 1, blockSize: 0, outputDtype: "int8" })],
  ];
  for (const [name, controls, node] of bad) {
    await p.set(controls);
    let expected: unknown;
    try {
      node();
    } catch (e) {
      expected = e;
    }
    assert.ok(expected instanceof Error, `${name}: Node throws`);
    const shown = await p.outputError();
    assert.deepEqual(shown, { code: "SHAPE_MISMATCH", message: expected.message }, name);
    assert.equal((expected as { code?: string }).code, "SHAPE_MISMATCH");
    t.diagnostic(`${name}: SHAPE_MISMATCH: ${expected.message}`);
  }
  // An attribute the version lacks is the library's INVALID_ATTRIBUTE, not ignored; saturate is greyed before 19.
  await p.set({ "#t-q-scale": "0.05", "#t-q-block-size": "2", "#t-q-opset": "19" });
  assert.equal((await p.outputError())?.code, "INVALID_ATTRIBUTE");
  await p.set({ "#t-q-block-size": "0", "#t-q-opset": "13", "#t-q-output": "uint8" });
  assert.equal(await p.outputError(), null);
  assert.equal(await p.page.evaluate(() => (globalThis as G).document.getElementById("t-q-saturate").disabled), true, "saturate greyed at 13");
  await p.set({ "#t-q-opset": "" });
  assert.equal(await p.page.evaluate(() => (globalThis as G).document.getElementById("t-q-saturate").disabled), false);
}

/** Runs in the page: every quantization control shown lies inside the window; the page is no wider. */
function controlsOnScreen(): { outside: string[]; short: string[]; narrow: string[]; pageWidth: number; visible: number } {
  const g = globalThis as G;
  const w = g.document.documentElement.clientWidth;
  const outside: string[] = [];
  const short: string[] = [];
  for (const c of g.document.querySelectorAll("#tensor-box .controls input, #tensor-box .controls select")) {
    if (c.offsetParent === null) continue;
    const r = c.getBoundingClientRect();
    if (r.left < -0.5 || r.right > w + 0.5) outside.push(`#${c.id} [${r.left.toFixed(0)}, ${r.right.toFixed(0)}]`);
    const target = c.type === "checkbox" ? c.closest("label").getBoundingClientRect() : r;
    if (target.height < 43.5) short.push(`#${c.id} ${target.height.toFixed(0)} px`);
  }
  // The list fields take a row of their own, as the values box does: a scale list stays readable.
  const narrow = ["t-q-scale", "t-q-zero-point"].map((id) => g.document.getElementById(id))
    .filter((c: G) => c.getBoundingClientRect().width < 0.6 * w).map((c: G) => `#${c.id} ${c.getBoundingClientRect().width.toFixed(0)} px`);
  return { outside, short, narrow, pageWidth: g.document.documentElement.scrollWidth, visible: w };
}

async function layoutAndAxe(p: Page, t: TestContext, name: string, scheme: string, phone: boolean): Promise<void> {
  await p.set({ "#t-dtype": "float32", "#t-shape": SHAPE.join(" "), "#t-values": VALUES });
  await p.quantize(CASES[5]);
  for (const op of ["quantize", "dequantize"]) {
    await p.set({ "#t-op": op, ...(op === "dequantize" ? { "#t-dtype": "int4", "#t-values": "1 -2 3 7 -8 0 ".repeat(4) } : {}) });
    for (const width of phone ? [390, 1400] : [1400]) {
      await p.page.setViewport(width, width === 390 ? 844 : 900);
      await p.page.evaluate(() => (globalThis as G).playground.settled());
      if (width === 390) {
        const fit = await p.page.evaluate(controlsOnScreen);
        assert.deepEqual(fit.outside, [], `${op}, 390 px: controls outside the window`);
        assert.deepEqual(fit.short, [], `${op}, 390 px: controls under 44 px`);
        assert.deepEqual(fit.narrow, [], `${op}, 390 px: list fields narrower than 60% of the window`);
        assert.equal(fit.pageWidth, fit.visible, `${op}, 390 px: the page scrolls sideways`);
      }
      const violations = await axeViolations((source) => p.page.evaluate<string[]>(source));
      if (violations === undefined) {
        t.diagnostic(`${name}: axe-core not installed`);
        continue;
      }
      t.diagnostic(`${name}, ${op}, ${scheme}, ${width} px: axe-core ${violations.length} violations`);
      assert.deepEqual(violations, [], `axe-core, ${op}, ${scheme}, ${width} px`);
    }
  }
}

for (const engine of ENGINES) {
  const name = ENGINE_LABEL[engine];
  test(`the playground in ${name}, issue 25: quantize and dequantize in the tensor box as quantizeLinear / dequantizeLinear in Node`, { timeout: 600_000 }, async (t) => {
    await withPage(t, engine, {}, async (p) => {
      await t.test("per tensor, per axis and blocked: every code, and the codes dequantized back, as in Node", (tt) => quantizeCases(p, tt));
      await t.test("typed codes dequantize as in Node", (tt) => dequantizeTyped(p, tt));
      await t.test("a scale or zero point of the wrong shape shows the library's SHAPE_MISMATCH", (tt) => badShapes(p, tt));
      await t.test("the controls stack inside a 390 px window (where the engine has one); axe-core finds nothing", async (tt) => {
        const phone = await p.page.setViewport(390, 844).then(() => true, (e: Error) => (tt.diagnostic(e.message), false));
        await layoutAndAxe(p, tt, name, "light", phone);
      });
    });
  });
  test(`the playground in ${name}, issue 25: quantize and dequantize in the dark theme, axe-core at 390 and 1400 px`, { timeout: 600_000 }, async (t) => {
    if (!COLOR_SCHEME_ENGINES.includes(engine)) {
      t.skip(`${name}: its WebDriver has no way to set prefers-color-scheme`);
      return;
    }
    await withPage(t, engine, { colorScheme: "dark" }, (p) => layoutAndAxe(p, t, name, "dark", true));
  });
}
