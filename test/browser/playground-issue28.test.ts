// suite: full
/**
 * The playground's issue 28 points, in every engine through engines.ts (Chromium, Firefox and
 * WebKit; the dark theme in the two whose drivers can set prefers-color-scheme): a phone's rows
 * that fit the screen (390 and 768 px), the dark theme with axe-core's contrast rules in both
 * themes, the inspector's code in the link, its keyboard, hex codes in the value explorer, values
 * the inspector's type cannot hold, and the smaller points (nan-lost notes, opset notes, the
 * inspector's rounding error and type changes, long pastes and the link, page jumps, a paste's
 * shape, tap targets, a copy-link button). Each check drives the page through `evaluate` (controls
 * set and input events fired in the page) and the engine's real keyboard, and reads the DOM back;
 * values are checked against the library in Node.
 *
 * An engine that is not installed is skipped with the reason, except under CI, where it fails.
 */
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { readElement, roundingError, Tensor } from "../../src/index.js";
import { castValues } from "../../src/node/index.js";
import { COLOR_SCHEME_ENGINES, ENGINE_LABEL, ENGINES, type EnginePage } from "./engines.js";
import { setControls, withPlaygroundPage } from "./playground-page.js";
import { axeViolations, OUTPUT } from "./support.js";

/** The page as the in-page functions below use it (the tests have no DOM types). */
type G = any;

/** A page of the playground in one engine, and the few moves every check makes. */
class Playground {
  /** Why the engine's window cannot be a phone's (390 x 844), or undefined when it can. */
  noPhone: string | undefined;

  constructor(readonly page: EnginePage, readonly url: string) {}

  /** Widths to check at: without a phone's window, 390 px is left out. */
  widths<T extends readonly [number, number]>(sizes: readonly T[]): T[] {
    return sizes.filter(([w]) => !this.noPhone || w !== 390);
  }

  /** Back to the phone's window (where the engine has one). */
  async phone(): Promise<void> {
    if (!this.noPhone) await this.page.setViewport(390, 844);
  }

  async open(hash = ""): Promise<void> {
    await this.page.goto("about:blank");
    await this.page.goto(this.url + hash);
    await this.page.waitFor(() => (globalThis as G).document.body.dataset.ready === "true");
  }

  settled(): Promise<void> {
    return this.page.evaluate(() => (globalThis as G).playground.settled());
  }

  /** Sets a control (a boolean: checked) and fires `event` (input, or an InputEvent's inputType), then waits for the redraws. */
  async set(selector: string, value: string | boolean, inputType?: string): Promise<void> {
    await this.page.evaluate(setControls, { controls: { [selector]: value }, ...(inputType ? { inputType } : {}) });
  }

  /** Sets a field and fires its change event (Enter, or leaving it), then waits for the redraws. */
  async change(selector: string, value: string): Promise<void> {
    await this.page.evaluate(({ selector, value }) => {
      const g = globalThis as G;
      const e = g.document.querySelector(selector);
      e.value = value;
      e.dispatchEvent(new g.Event("change", { bubbles: true }));
      return g.playground.settled();
    }, { selector, value });
  }

  async click(selector: string): Promise<void> {
    await this.page.evaluate((selector) => {
      const g = globalThis as G;
      const e = g.document.querySelector(selector);
      if (!e) throw new Error(`no ${selector}`);
      e.click();
      return g.playground.settled();
    }, selector);
  }

  async focus(selector: string): Promise<void> {
    await this.page.evaluate((selector) => (globalThis as G).document.querySelector(selector).focus(), selector);
  }

  async press(key: string): Promise<void> {
    await this.page.press(key);
    await this.settled();
  }

  text(selector: string): Promise<string | null> {
    return this.page.evaluate((sel) => (globalThis as G).document.querySelector(sel)?.textContent ?? null, selector);
  }

  attr(selector: string, name: string): Promise<string | null> {
    return this.page.evaluate(({ sel, name }) => (globalThis as G).document.querySelector(sel)?.getAttribute(name) ?? null, { sel: selector, name });
  }

  value(selector: string): Promise<string> {
    return this.page.evaluate((sel) => (globalThis as G).document.querySelector(sel).value, selector);
  }

  /** What has the keyboard: its data-bit, or its class. */
  focused(): Promise<string> {
    return this.page.evaluate(() => {
      const a = (globalThis as G).document.activeElement;
      return a?.dataset?.bit !== undefined ? `bit ${a.dataset.bit}` : `${a?.tagName?.toLowerCase()}.${a?.className}`;
    });
  }

  hash(): Promise<string> {
    return this.page.evaluate(() => (globalThis as G).location.hash);
  }

  /** axe-core's violations, as "rule: target" lines; undefined without axe-core. */
  axe(): Promise<string[] | undefined> {
    return axeViolations((source) => this.page.evaluate<string[]>(source));
  }
}

function withPlayground(t: TestContext, engine: (typeof ENGINES)[number], options: { colorScheme?: "light" | "dark" },
  body: (p: Playground) => Promise<void>): Promise<void> {
  return withPlaygroundPage(t, engine, "playground-site-28", options, async (page, url) => {
    const p = new Playground(page, url);
    p.noPhone = await page.setViewport(390, 844).then(() => undefined, (e: Error) => e.message);
    if (p.noPhone) t.diagnostic(p.noPhone);
    await p.open();
    await body(p);
  });
}

// ---- 9. On a phone, the answer is on screen ------------------------------------------------------

interface RowFit {
  block: string;
  type: string;
  /** Cells (type, value, abs, rel, what; or type and the error) not wholly inside the window, or clipped. */
  outside: string[];
}

/** Runs in the page: every row of every value block, each block scrolled to first (blocks off screen are not laid out). */
function rowsOnScreen(): { rows: RowFit[]; pageWidth: number; window: number; visible: number; boxes: number[] } {
  const g = globalThis as G;
  // The width left beside a vertical scrollbar (Firefox draws one of 12 px; Chromium's headless one overlays).
  const w = g.document.documentElement.clientWidth;
  const rows: RowFit[] = [];
  for (const block of g.document.querySelectorAll(".value-block")) {
    block.scrollIntoView();
    for (const tr of block.querySelectorAll("tr[data-type]")) {
      const cells = tr.querySelector("td.error") ? ["th.type", "td.error"] : ["th.type", "td.value", "td.abs", "td.rel", "td.what"];
      const outside: string[] = [];
      for (const sel of cells) {
        const c = tr.querySelector(sel);
        const r = c.getBoundingClientRect();
        // Inside the window, not empty, and nothing cut off (cells hide what overflows them).
        if (r.width <= 0 || r.left < -0.5 || r.right > w + 0.5 || c.scrollWidth > c.clientWidth + 1) {
          outside.push(`${sel} [${r.left.toFixed(0)}, ${r.right.toFixed(0)}] scroll ${c.scrollWidth}/${c.clientWidth}`);
        }
      }
      rows.push({ block: block.getAttribute("data-input"), type: tr.getAttribute("data-type"), outside });
    }
  }
  g.scrollTo(0, 0);
  const boxes = [...g.document.querySelectorAll(".value-block .scroll")].map((b: G) => b.scrollWidth - b.clientWidth);
  return { rows, pageWidth: g.document.documentElement.scrollWidth, window: g.innerWidth, visible: w, boxes };
}

async function phoneLayout(p: Playground, t: TestContext): Promise<void> {
  // Values with the widest cells: 22-digit values, 64-bit codes, nan-lost reasons, refusals (complex rows).
  await p.set("#values", "3.4028234663852886e38 -nan 1e-9 -2.5 9007199254740993 1e300 0.1 -1000");
  for (const [width, height] of p.widths([[390, 844], [768, 1024]] as const)) {
    await p.page.setViewport(width, height);
    await p.settled();
    const fit = await p.page.evaluate(rowsOnScreen);
    assert.equal(fit.window, width);
    assert.equal(fit.rows.length, 8 * 28, `${width} px: 8 values, 28 rows each`);
    assert.deepEqual(fit.rows.filter((r) => r.outside.length > 0), [], `${width} px: cells off screen`);
    assert.ok(fit.visible >= width - 20, `${width} px: ${fit.visible} px beside the scrollbar`);
    assert.equal(fit.pageWidth, fit.visible, `${width} px: the page scrolls sideways`);
    assert.deepEqual(fit.boxes.filter((b) => b > 0), [], `${width} px: a table scrolls sideways in its box`);
    t.diagnostic(`${width} px: ${fit.rows.length} rows, each with its type, value, errors and outcome inside the window`);
  }
  await p.phone();
  await p.set("#values", "1000 0.1 -nan");
}

// ---- 11, 12. The inspector's code in the link; its keyboard -------------------------------------------

async function bitsInLink(p: Playground): Promise<void> {
  await p.set("#i-type", "float16");
  await p.set("#i-input", "1");
  await p.click('#i-result button.bit[data-bit="15"]');
  assert.equal(await p.attr("#i-result", "data-code"), "0xbc00");
  assert.match(await p.hash(), /(^#|&)i-input=0xbc00(&|$)/, "a clicked bit is in the link");
  await p.click("#i-result button.step.next");
  const code = (await p.attr("#i-result", "data-code"))!;
  assert.equal(code, "0xbbff", "next from -1 is toward zero");
  assert.match(await p.hash(), /(^#|&)i-input=0xbbff(&|$)/, "a step is in the link");
  // A reload: the same link in a new document.
  await p.open(await p.hash());
  assert.equal(await p.value("#i-input"), "0xbbff");
  assert.equal(await p.attr("#i-result", "data-code"), "0xbbff");
  assert.equal(await p.text("#i-result [data-fact=value]"), "-0.99951171875");
}

async function bitKeyboard(p: Playground): Promise<void> {
  await p.set("#i-type", "float8e4m3fn");
  await p.set("#i-input", "1");
  assert.equal(await p.attr("#i-result", "data-code"), "0x38");
  await p.focus('#i-result button.bit[data-bit="6"]');
  await p.press("Enter");
  assert.equal(await p.attr("#i-result", "data-code"), "0x78", "Enter flips the bit");
  assert.equal(await p.focused(), "bit 6", "Enter keeps the keyboard on the bit");
  await p.press("Enter");
  assert.equal(await p.attr("#i-result", "data-code"), "0x38", "and again");
  assert.equal(await p.focused(), "bit 6");
  await p.press("ArrowRight");
  assert.equal(await p.focused(), "bit 5", "ArrowRight: the next, less significant bit");
  await p.press("ArrowLeft");
  await p.press("ArrowLeft");
  assert.equal(await p.focused(), "bit 7");
  await p.press("ArrowLeft");
  assert.equal(await p.focused(), "bit 7", "no bit past the first");
  await p.press("End");
  assert.equal(await p.focused(), "bit 0");
  await p.press("Enter");
  assert.equal(await p.attr("#i-result", "data-code"), "0x39");
  assert.equal(await p.focused(), "bit 0");
  await p.press("Home");
  assert.equal(await p.focused(), "bit 7");
  await p.focus("#i-result button.step.next");
  await p.press("Enter");
  assert.equal(await p.attr("#i-result", "data-code"), "0x3a", "Enter on next steps");
  assert.match(await p.focused(), /^button\.step next/, "and the keyboard stays on next");
}

// ---- 13, 14. Hex codes in the explorer; values the inspector's type cannot hold --------------------

function blockRows(input: string): { source: string | null; heading: string; error: string | null; rows: Record<string, string>[] } {
  const b = (globalThis as G).document.querySelector(`.value-block[data-input="${input}"]`);
  return {
    source: b.getAttribute("data-source"), heading: b.querySelector("h3").textContent,
    error: b.querySelector(":scope > [data-error]")?.getAttribute("data-error") ?? null,
    rows: [...b.querySelectorAll("tr[data-type]")].map((tr: G) => ({
      type: tr.getAttribute("data-type"), code: tr.getAttribute("data-code") ?? "", value: tr.getAttribute("data-value") ?? "",
      flag: tr.getAttribute("data-flag") ?? "", error: tr.getAttribute("data-error") ?? "",
    })),
  };
}

async function hexInExplorer(p: Playground): Promise<void> {
  await p.set("#from", "float16");
  await p.set("#values", "0x3c00 0b0011110000000000 1 0x7e00 0x1ffff");
  const hex = await p.page.evaluate(blockRows, "0x3c00");
  const binary = await p.page.evaluate(blockRows, "0b0011110000000000");
  const one = await p.page.evaluate(blockRows, "1");
  assert.equal(hex.error, null);
  assert.equal(hex.source, "1");
  assert.match(hex.heading, /^0x3c00 read as a float16 code is 1/);
  assert.deepEqual(hex.rows, one.rows, "0x3c00 as float16 is 1, cast to every type");
  assert.deepEqual(binary.rows, one.rows);
  for (const row of hex.rows.filter((r) => !r.error && r.type !== "string")) {
    const want = castValues(["1"], { from: "float16", to: row.type }).rows[0];
    assert.equal(row.code, want.code, row.type);
  }
  assert.equal((await p.page.evaluate(blockRows, "0x7e00")).source, "nan");
  assert.match((await p.page.evaluate(blockRows, "0x1ffff")).error!, /0x1ffff is wider than float16's 16 bits/);
  await p.set("#from", "float64");
  await p.set("#values", "0x3ff0000000000000");
  assert.equal((await p.page.evaluate(blockRows, "0x3ff0000000000000")).source, "1");
  await p.set("#values", "1000 0.1 -nan");
}

async function inspectorOutOfRange(p: Playground): Promise<void> {
  const shownAndVisible = (text: string) => p.page.evaluate((text) => {
    // Elements whose own text holds `text` and that take up room on screen (a live region that is
    // visually hidden does not).
    const all = [...(globalThis as G).document.querySelectorAll("#inspector *")] as G[];
    return all.filter((e) => [...e.childNodes].some((n: G) => n.nodeType === 3 && n.textContent.includes(text)))
      .filter((e) => { const r = e.getBoundingClientRect(); return r.width > 1 && r.height > 1; }).length;
  }, text);
  await p.set("#i-type", "float8e4m3fn");
  for (const saturate of [true, false]) {
    await p.set("#saturate", saturate);
    await p.set("#i-input", "500");
    const want = castValues(["500"], { from: "float64", to: "float8e4m3fn", saturate }).rows[0];
    assert.equal(await p.attr("#i-result", "data-code"), want.code, `500, saturate=${saturate}`);
    assert.equal(await p.text("#i-result [data-fact=value]"), want.result);
    assert.equal(await p.text("#i-result [data-fact=flag]"), want.flag, "the table's flag");
    assert.equal(await p.text("#i-result .error"), null, "no error");
    const inspector = (await p.text("#inspector"))!;
    assert.ok(!inspector.includes("value 0") && !inspector.includes("INVALID_VALUE"), inspector);
    assert.match((await p.attr("#i-result [data-note]", "data-note"))!, new RegExp(`^500 is outside .*: Cast to float8e4m3fn \\(saturate=${saturate ? 1 : 0}, round_mode=up\\) gives ${want.result}, ${want.flag}$`));
  }
  await p.set("#saturate", true);
  await p.set("#i-input", "464");
  assert.equal(await p.attr("#i-result", "data-code"), castValues(["464"], { from: "float64", to: "float8e4m3fn" }).rows[0].code);
  assert.equal(await p.text("#i-result [data-fact=flag]"), null, "464 is stored (a tie rounded to 448), not cast");
  await p.set("#i-type", "int8");
  await p.set("#i-input", "300");
  const wrap = castValues(["300"], { from: "int64", to: "int8" }).rows[0];
  assert.equal(await p.attr("#i-result", "data-code"), wrap.code);
  assert.equal(await p.text("#i-result [data-fact=flag]"), wrap.flag);
  // A message is shown once (the live region repeating it is visually hidden).
  await p.set("#i-input", "abc");
  const message = (await p.text("#i-result .error"))!;
  assert.match(message, /"abc" is not a value or a code/);
  assert.equal(await shownAndVisible('"abc" is not a value or a code'), 1, "the message is on screen once");
  await p.set("#i-type", "float16");
  await p.set("#i-input", "0.1");
}

// ---- 15. The smaller points ---------------------------------------------------------------------

async function nanLostNote(p: Playground): Promise<void> {
  await p.set("#values", "nan 1");
  for (const [width, height] of p.widths([[1400, 900], [390, 844]] as const)) {
    await p.page.setViewport(width, height);
    await p.settled();
    const m = await p.page.evaluate(() => {
      const b = (globalThis as G).document.querySelector('.value-block[data-input="nan"]');
      b.scrollIntoView();
      const row = (type: string) => b.querySelector(`tr[data-type=${type}]`);
      const lost = row("float4e2m1");
      const lines = [...lost.querySelectorAll(".why .token")].map((e: G) => e.getClientRects().length);
      return {
        why: lost.querySelector(".why").getAttribute("data-why"), lines, flag: lost.getAttribute("data-flag"),
        lost: lost.getBoundingClientRect().height, plain: row("float32").getBoundingClientRect().height,
        text: lost.querySelector(".why").textContent,
      };
    });
    assert.equal(m.flag, "nan lost");
    assert.equal(m.why, "float4e2m1 has no NaN, so the cast writes 0x8 (-0) for nan");
    assert.equal(m.text, "no NaN: writes 0x8 (-0)");
    assert.deepEqual(m.lines, [1, 1], `${width} px: the code and its value are each on one line`);
    // At most one line more than a row without a note (the table: two lines; a card: its lines).
    assert.ok(m.lost <= m.plain + 22, `${width} px: a nan-lost row ${m.lost} px high, a plain one ${m.plain} px`);
  }
  await p.set("#values", "1000 0.1 -nan");
}

async function opsetNotes(p: Playground): Promise<void> {
  const controls = () => p.page.evaluate(() => [...(globalThis as G).document.querySelectorAll("#explorer .controls > *")]
    .map((e: G) => { const r = e.getBoundingClientRect(); return `${e.tagName} ${r.left.toFixed(0)},${(r.top + (globalThis as G).scrollY).toFixed(0)} ${r.width.toFixed(0)}x${r.height.toFixed(0)}`; }));
  const visible = (sel: string) => p.page.evaluate((sel) => (globalThis as G).document.querySelector(sel).getClientRects().length > 0, sel);
  for (const [width, height] of p.widths([[1400, 900], [390, 844]] as const)) {
    await p.page.setViewport(width, height);
    await p.set("#opset", "28");
    const before = await controls();
    const note = await p.text("#cast-version");
    assert.match(note!, /^Cast-28: saturate true, round_mode up$/);
    await p.set("#opset", "abc");
    assert.equal(await visible("#opset-error"), true);
    assert.equal(await visible("#cast-version"), true, `${width} px: the Cast note stays`);
    assert.equal(await p.text("#cast-version"), "Cast-?: no such opset");
    const after = await controls();
    // The note's own width changes; every control keeps its place.
    assert.deepEqual(after.slice(0, -1), before.slice(0, -1), `${width} px: the controls moved`);
    assert.equal(after.at(-1)!.split(" ")[1], before.at(-1)!.split(" ")[1], `${width} px: the note moved`);
  }
  await p.set("#opset", "100");
  assert.equal(await p.text("#cast-version"), "Cast-28: saturate true, round_mode up (opset 100 is past the newest opset tensorcast knows (28), so this is the newest Cast)");
  assert.equal(await visible("#opset-error"), false);
  await p.set("#opset", "28");
  await p.phone();
}

async function inspectorRoundingError(p: Playground): Promise<void> {
  await p.set("#i-type", "float8e4m3fn");
  await p.set("#i-input", "0.1");
  const [abs, rel] = roundingError({ display: "0.1", value: 0.1 }, readElement(Tensor.fromValues([0.1], "float8e4m3fn"), 0));
  assert.equal(await p.attr("#i-result [data-fact=error]", "data-abs"), String(abs));
  assert.equal(await p.attr("#i-result [data-fact=error]", "data-rel"), String(rel));
  assert.match((await p.text("#i-result [data-fact=error]"))!, /^0\.00156 \(relative 0\.0156\)$/);
  await p.set("#i-input", "0.5");
  assert.equal(await p.text("#i-result [data-fact=error]"), null, "an exact value has no rounding error to show");
}

async function inspectorTypeChange(p: Playground): Promise<void> {
  await p.set("#i-type", "float16");
  await p.set("#i-input", "1");
  await p.click('#i-result button.bit[data-bit="0"]');
  assert.equal(await p.value("#i-input"), "0x3c01");
  await p.set("#i-type", "bfloat16");
  assert.equal(await p.attr("#i-result [data-kept]", "data-kept"), "code");
  assert.equal(await p.text("#i-result [data-kept]"),
    "Type changed from float16 to bfloat16: the code 0x3c01 is kept (it was 1.0009765625 in float16) and read as bfloat16. keep the value 1.0009765625 instead");
  assert.equal(await p.attr("#i-result", "data-code"), "0x3c01");
  await p.click("#i-result button.keep-value");
  assert.equal(await p.value("#i-input"), "1.0009765625");
  assert.equal(await p.attr("#i-result", "data-code"), "0x3f80", "1.0009765625 stored as bfloat16 is 1");
  assert.equal(await p.text("#i-result [data-kept]"), null);
  await p.set("#i-type", "float8e4m3fn");
  assert.equal(await p.text("#i-result [data-kept]"), "Type changed from bfloat16 to float8e4m3fn: the value 1.0009765625 is kept and stored as float8e4m3fn.");
  await p.set("#i-input", "0.1");
  assert.equal(await p.text("#i-result [data-kept]"), null, "typing ends the note");
}

/** Runs in the page: `n` values typed (no paste event: the page's input guard keeps them out all the same). */
function longList({ id, n }: { id: string; n: number }): Promise<void> {
  const g = globalThis as G;
  const box = g.document.getElementById(id);
  box.value = Array.from({ length: n }, (_, i) => String(i / 2)).join(" ");
  box.dispatchEvent(new g.Event("input", { bubbles: true }));
  return g.playground.settled();
}

async function longPaste(p: Playground): Promise<void> {
  await p.page.evaluate(longList, { id: "values", n: 100_000 });
  assert.match((await p.text("#pasted"))!, /The link to this page cannot hold them \(a link keeps text up to 2,000 characters\)/);
  const hash = await p.hash();
  assert.ok(!/(^#|&)values=/.test(hash), `the link holds an empty values box: ${hash}`);
  assert.match((await p.text("#link-note"))!, /^The link leaves out the values typed in “a value in every data type”: too long for a link/);
  assert.match((await p.text("#explorer-status"))!, /showing values 1–8 of 100000\./);
  assert.match((await p.text("#results .pager .where"))!, /\(page 1 of 12,500\)/);
  await p.change("#results .pager .jump", "5000");
  assert.match((await p.text("#explorer-status"))!, /showing values 39993–40000 of 100000\./);
  assert.equal(await p.attr(".value-block", "data-input"), String(39992 / 2));
  await p.set("#values", "1000 0.1 -nan");
  assert.equal(await p.text("#link-note"), "");
  // The tensor box's pager jumps too.
  await p.set("#t-shape", "");
  await p.page.evaluate(longList, { id: "t-values", n: 2000 });
  await p.change("#t-input-table .pager .jump", "8");
  assert.match((await p.text("#t-input-table .pager .where"))!, /^elements 1,793–2,000 of 2,000 \(page 8 of 8\)$/);
  await p.set("#t-shape", "2 3");
  await p.set("#t-values", "1.5 448 1000 nan 0.1 -2");
}

async function shapeFromPaste(p: Playground): Promise<void> {
  const shown = () => p.attr("#t-input-table", "data-shape");
  await p.set("#t-values", "1 2 3 4 5", "insertFromPaste");
  assert.equal(await p.value("#t-shape"), "", "a flat paste of 5 values: 1-D");
  assert.equal(await shown(), "[5]");
  assert.equal(await p.text("#t-shape-note"), "shape cleared (1-D) to fit the paste (it was 2 3)");
  await p.set("#t-values", "[[1, 2], [3, 4]]", "insertFromPaste");
  assert.equal(await p.value("#t-shape"), "2 2");
  assert.equal(await shown(), "[2,2]");
  await p.set("#t-shape", "4");
  assert.equal(await p.text("#t-shape-note"), "", "typing a shape ends the note");
  await p.set("#t-values", "5 6 7 8", "insertFromPaste");
  assert.equal(await p.value("#t-shape"), "4", "a shape that fits the paste is kept");
  await p.set("#t-values", "1 2 3", "insertText");
  assert.equal(await p.value("#t-shape"), "4", "typing never changes the shape");
  assert.equal(await p.attr("#t-input div.error", "data-code"), "SHAPE_MISMATCH");
  await p.set("#t-shape", "2 3");
  await p.set("#t-values", "1.5 448 1000 nan 0.1 -2");
}

/** Runs in the page: every control on screen smaller than `min` px (checkboxes: the label around them, `label` px). */
function smallTargets({ min, label }: { min: number; label: number }): string[] {
  const g = globalThis as G;
  const out: string[] = [];
  for (const e of g.document.querySelectorAll("input, select, textarea, button")) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    const name = `${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}.${e.className}`;
    if (r.width < 24 || r.height < 24) out.push(`${name} ${r.width.toFixed(0)}x${r.height.toFixed(0)}`);
    if (e.type === "checkbox") {
      const l = e.closest("label").getBoundingClientRect();
      if (l.height < label) out.push(`label of ${name} ${l.height.toFixed(0)} px high`);
    } else if (r.height < min) out.push(`${name} ${r.height.toFixed(0)} px high`);
  }
  return out;
}

async function tapTargets(p: Playground): Promise<void> {
  await p.set("#i-type", "float16");
  await p.set("#i-input", "1");
  await p.set("#values", Array.from({ length: 20 }, (_, i) => String(i)).join(" "));
  assert.deepEqual(await p.page.evaluate(smallTargets, { min: 44, label: 44 }), [], "390 px: 44 px targets");
  await p.page.setViewport(1400, 900);
  await p.settled();
  assert.deepEqual(await p.page.evaluate(smallTargets, { min: 24, label: 24 }), [], "1400 px: 24 px targets");
  await p.phone();
  await p.set("#values", "1000 0.1 -nan");
}

async function copyLink(p: Playground): Promise<void> {
  await p.set("#values", "0.3 7");
  await p.page.evaluate(() => {
    const g = globalThis as G;
    Object.defineProperty(g.navigator, "clipboard", { configurable: true, value: { writeText: async (text: string) => { g.copied = text; } } });
  });
  await p.click("#copy-link");
  await p.page.waitFor(() => (globalThis as G).copied !== undefined);
  const [copied, href] = await p.page.evaluate(() => [(globalThis as G).copied, (globalThis as G).location.href]);
  assert.equal(copied, href);
  assert.match(copied, /#(.*&)?values=0\.3\+7(&|$)/);
  assert.equal(await p.text("#link-status"), "Link copied.");
  await p.page.evaluate(() => {
    Object.defineProperty((globalThis as G).navigator, "clipboard", { configurable: true, value: { writeText: () => Promise.reject(new Error("denied")) } });
  });
  await p.click("#copy-link");
  await p.page.waitFor(() => !(globalThis as G).document.getElementById("link-text").hidden);
  assert.equal(await p.value("#link-text"), href, "refused: the link is shown to copy by hand");
  assert.match((await p.text("#link-status"))!, /refused the clipboard/);
  await p.set("#values", "1000 0.1 -nan");
}

for (const engine of ENGINES) {
  const name = ENGINE_LABEL[engine];
  test(`the playground in ${name}, issue 28: a phone's rows on screen, the inspector's link and keyboard, hex codes, out-of-range values, the smaller points`, { timeout: 600_000 }, async (t) => {
    await withPlayground(t, engine, {}, async (p) => {
      await t.test("9. at 390 and 768 px every row's type, value, errors and outcome are inside the window; nothing scrolls sideways", () => phoneLayout(p, t));
      await t.test("11. a clicked bit or step is in the link; a reload restores the code", () => bitsInLink(p));
      await t.test("12. Enter flips a bit and keeps the keyboard on it; arrow keys, Home and End move between bits", () => bitKeyboard(p));
      await t.test("13. the value explorer reads 0x3c00 and 0b... as codes of the 'stored first as' type", () => hexInExplorer(p));
      await t.test("14. 500 in float8e4m3fn: the cast's result and flag (saturate on and off), no 'value 0' error; a message shown once", () => inspectorOutOfRange(p));
      await t.test("15. a nan-lost row: a short reason, its code on one line, one line taller at most", () => nanLostNote(p));
      await t.test("15. a bad opset keeps the Cast note and the controls in place; opset 100 says it runs the newest Cast", () => opsetNotes(p));
      await t.test("15. the inspector shows a typed value's rounding error", () => inspectorRoundingError(p));
      await t.test("15. changing the inspector's type says whether the code or the value is kept, and offers the value", () => inspectorTypeChange(p));
      await t.test("15. a 100,000-value paste: the link says it cannot hold it (no empty values= in it); a page number jumps", () => longPaste(p));
      await t.test("15. a paste that does not fit the tensor box's shape gets the shape it implies", () => shapeFromPaste(p));
      await t.test("15. tap targets: 44 px at 390 px, 24 px at 1400 px", (tt) => (p.noPhone ? tt.skip(p.noPhone) : tapTargets(p)));
      await t.test("15. copy link: the page's link with its state, or the link shown where the clipboard refuses", () => copyLink(p));
    });
  });
}

// ---- 10. Dark mode ------------------------------------------------------------------------------

/** Runs in the page: the colours that make the theme, as computed. */
function themeColours(): Record<string, string> {
  const g = globalThis as G;
  const css = (sel: string, prop: string) => g.getComputedStyle(g.document.querySelector(sel))[prop];
  return {
    page: css("body", "backgroundColor"), text: css("body", "color"), sign: css(".value-block .f-sign", "color"),
    exponent: css(".value-block .f-exponent", "color"), mantissa: css(".value-block .f-mantissa", "color"),
    tick: css("svg[data-plot=values] path.tick-normal", "stroke"), curve: css("svg[data-plot=error] path.error-line", "stroke"),
    button: css("#copy-link", "backgroundColor"), input: css("#values", "backgroundColor"), flag: css(".value-block .flag-exact", "backgroundColor"),
    code: css("table.codes td.code-normal", "backgroundColor"),
  };
}

/** Relative luminance of a computed `rgb(...)` colour. */
function luminance(rgb: string): number {
  const [r, g, b] = rgb.match(/[\d.]+/g)!.slice(0, 3).map((x) => {
    const c = Number(x) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

for (const engine of ENGINES) {
  const name = ENGINE_LABEL[engine];
  test(`the playground in ${name}, issue 28: a dark theme under prefers-color-scheme: dark, and axe-core's contrast rules in both themes`, { timeout: 600_000 }, async (t) => {
    if (!COLOR_SCHEME_ENGINES.includes(engine)) {
      t.skip(`${name}: its WebDriver has no way to set prefers-color-scheme`);
      return;
    }
    const colours: Record<string, Record<string, string>> = {};
    for (const scheme of ["light", "dark"] as const) {
      await withPlayground(t, engine, { colorScheme: scheme }, async (p) => {
        assert.equal(await p.page.evaluate(() => (globalThis as G).matchMedia("(prefers-color-scheme: dark)").matches), scheme === "dark");
        await p.set("#values", "1000 0.1 -nan");
        colours[scheme] = await p.page.evaluate(themeColours);
        for (const width of [390, 1400]) {
          await p.page.setViewport(width, width === 390 ? 844 : 900);
          await p.settled();
          const violations = await p.axe();
          if (violations === undefined) {
            t.diagnostic(`${name}: axe-core not installed`);
            continue;
          }
          t.diagnostic(`${name}, ${scheme}, ${width} px: axe-core ${violations.length} violations`);
          assert.deepEqual(violations, [], `axe-core, ${scheme}, ${width} px`);
        }
        if (engine === "chromium") {
          // The page of docs/playground.png (playground.test.ts), in this theme.
          await p.set("#values", "1000");
          await p.set("#format", "float8e4m3fn");
          await p.page.screenshot(join(OUTPUT, `playground-${scheme}.png`));
        }
      });
    }
    if (!colours.dark) return;
    t.diagnostic(`${name}: dark ${JSON.stringify(colours.dark)}`);
    assert.ok(luminance(colours.dark.page) < 0.05, `a dark page: ${colours.dark.page}`);
    assert.ok(luminance(colours.dark.text) > 0.6, `light text: ${colours.dark.text}`);
    assert.ok(luminance(colours.light.page) > 0.9, `a light page: ${colours.light.page}`);
    for (const k of ["button", "input", "flag", "code"]) assert.ok(luminance(colours.dark[k]) < 0.05, `dark ${k}: ${colours.dark[k]}`);
    // The bit colours and the plots' strokes are the dark theme's own, lighter than the light theme's.
    for (const k of ["sign", "exponent", "mantissa", "tick", "curve"]) {
      assert.ok(luminance(colours.dark[k]) > luminance(colours.light[k]) + 0.1, `${k}: ${colours.light[k]} light, ${colours.dark[k]} dark`);
    }
  });
}
