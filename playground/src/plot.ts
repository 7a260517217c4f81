/**
 * The format view: every representable value of a small float format on a log2 axis, the relative
 * error of rounding to it across (and past) its range, a table of every code for formats of 8 bits
 * or fewer, and all formats side by side on one axis. Plots are SVG, drawn from the library's own
 * decoder and its cast.
 */
import {
  cast, decodeFloat, DTYPES, formatHex, formatNumber, isCodedFloat, Tensor, type CastOptions, type DType,
} from "tensorcast";
import { el } from "./dom.js";

/** float16, bfloat16, the float8s, e8m0, float4 and float6: the formats stored as codes. */
export const FORMATS: readonly DType[] = DTYPES.filter(isCodedFloat);

export type CodeClass = "zero" | "subnormal" | "normal" | "inf" | "nan";

export interface FormatStats {
  readonly codes: number;
  readonly finite: number;
  readonly zeros: number;
  readonly subnormals: number;
  readonly normals: number;
  readonly infinities: number;
  readonly nans: number;
  /** Positive finite values, ascending, each once. */
  readonly positives: readonly number[];
  /** Which positive values are subnormal. */
  readonly subnormalValues: ReadonlySet<number>;
}

/** What kind of value a code is, from its bit fields and its decoded value. */
export function codeClass(t: DType, code: number): CodeClass {
  const f = t.format!;
  const v = decodeFloat(f, code);
  if (v !== v) return "nan";
  if (!Number.isFinite(v)) return "inf";
  if (v === 0) return "zero";
  const exponentField = Math.floor(code / 2 ** f.manBits) % 2 ** f.expBits;
  return exponentField === 0 && f.subnormals ? "subnormal" : "normal";
}

const statsCache = new Map<string, FormatStats>();

/** Counts of every kind of code, and the positive values, by decoding all 2^bits codes. */
export function formatStats(t: DType): FormatStats {
  const cached = statsCache.get(t.name);
  if (cached) return cached;
  const f = t.format!;
  const codes = 2 ** t.bits;
  const counts: Record<CodeClass, number> = { zero: 0, subnormal: 0, normal: 0, inf: 0, nan: 0 };
  const positives = new Set<number>();
  const subnormalValues = new Set<number>();
  for (let c = 0; c < codes; c++) {
    const kind = codeClass(t, c);
    counts[kind]++;
    const v = decodeFloat(f, c);
    if (v > 0 && Number.isFinite(v)) {
      positives.add(v);
      if (kind === "subnormal") subnormalValues.add(v);
    }
  }
  const stats: FormatStats = {
    codes, finite: counts.zero + counts.subnormal + counts.normal, zeros: counts.zero, subnormals: counts.subnormal,
    normals: counts.normal, infinities: counts.inf, nans: counts.nan,
    positives: [...positives].sort((a, b) => a - b), subnormalValues,
  };
  statsCache.set(t.name, stats);
  return stats;
}

/** `2^k` for exact powers of two far from 1, the number otherwise. */
export function formatLimit(x: number): string {
  const k = Math.log2(Math.abs(x));
  // log2 rounds: float64's max (2^1024 - 2^971) has log2 1024 exactly, so check the power itself.
  if (Number.isInteger(k) && 2 ** k === Math.abs(x) && (k <= -10 || k >= 16)) return `${x < 0 ? "-" : ""}2^${k}`;
  return formatNumber(x);
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(c);
  return e;
}

let plotIds = 0;

/**
 * An SVG drawn at `width` CSS pixels (the viewBox is the same size, so 11 px text stays 11 px on a
 * phone), announced as an image with a title and a description.
 */
function plotRoot(width: number, height: number, kind: string, title: string, desc: string, attrs: Record<string, string | number> = {}): SVGElement {
  const id = `plot-${++plotIds}`;
  const root = svg("svg", {
    // A plot with buttons in it (the compare plot) is a group: an image cannot hold controls.
    viewBox: `0 0 ${width} ${height}`, width, height, class: "plot", "data-plot": kind, role: "img",
    "aria-labelledby": `${id}-title ${id}-desc`, ...attrs,
  });
  root.append(svg("title", { id: `${id}-title` }, title), svg("desc", { id: `${id}-desc` }, desc));
  return root;
}

/** Where a plot's axis starts and ends: narrow plots (a phone) put their labels above, not beside. */
export interface Layout {
  readonly width: number;
  readonly left: number;
  readonly right: number;
  readonly narrow: boolean;
}

/**
 * The layout for a plot `width` CSS pixels wide (at least 280).
 * @example layout(390) // { width: 390, left: 44, right: 10, narrow: true }
 */
export function layout(width: number): Layout {
  const w = Math.max(280, Math.round(width));
  const narrow = w < 600;
  return { width: w, left: narrow ? 44 : 110, right: narrow ? 10 : 20, narrow };
}

interface Axis {
  readonly lo: number;
  readonly hi: number;
  readonly l: Layout;
  x(log2v: number): number;
}

function axis(l: Layout, lo: number, hi: number): Axis {
  const span = l.width - l.left - l.right;
  return { lo, hi, l, x: (v) => l.left + ((v - lo) / (hi - lo)) * span };
}

/** A step between labelled powers of two that keeps labels apart (about 70 px each). */
function labelStep(a: Axis): number {
  const most = Math.max(3, Math.floor((a.l.width - a.l.left - a.l.right) / 70));
  for (const step of [1, 2, 4, 5, 8, 10, 16, 20, 32, 40, 64]) if ((a.hi - a.lo) / step <= most) return step;
  return 128;
}

function xAxis(a: Axis, y: number): SVGElement {
  const { l } = a;
  const g = svg("g", { class: "axis" });
  g.append(svg("line", { x1: l.left, x2: l.width - l.right, y1: y + 0.5, y2: y + 0.5 }));
  const step = labelStep(a);
  for (let k = Math.ceil(a.lo / step) * step; k <= a.hi; k += step) {
    const x = crisp(a.x(k));
    g.append(svg("line", { x1: x, x2: x, y1: y, y2: y + 4 }));
    // Labels at the ends are kept inside the plot rather than centred past its edge.
    const anchor = x > l.width - 16 ? "end" : "middle";
    g.append(svg("text", { x: anchor === "end" ? l.width - 2 : x, y: y + 16, "text-anchor": anchor }, k === 0 ? "1" : `2^${k}`));
  }
  return g;
}

/**
 * The centre of the pixel column holding x: a 1 px line drawn there covers one column fully. (A
 * line on a column boundary is smeared over two columns at half strength, which drew every other
 * tick lighter.)
 */
function crisp(x: number): number {
  return Math.floor(x) + 0.5;
}

/** One path of vertical ticks, one per pixel column (31744 float16 values make ~800 ticks). */
function ticks(a: Axis, values: readonly number[], y0: number, y1: number, cls: string): SVGElement {
  const columns = new Set<number>();
  for (const v of values) columns.add(crisp(a.x(Math.log2(v))));
  let d = "";
  for (const x of columns) d += `M${x} ${y0}V${y1}`;
  return svg("path", { d, class: cls, "data-columns": columns.size });
}

/** The x range of a format: a binade of margin around its smallest positive and largest value. */
function formatRange(t: DType): [number, number] {
  const s = formatStats(t);
  const lo = Math.floor(Math.log2(s.positives[0])) - 1;
  const hi = Math.ceil(Math.log2(s.positives[s.positives.length - 1])) + 1;
  return [lo, hi];
}

/** Every positive representable value of `t` as a tick on a log2 axis (negative values mirror them). */
export function valuesPlot(t: DType, l: Layout): SVGElement {
  const s = formatStats(t);
  const a = axis(l, ...formatRange(t));
  const top = l.narrow ? 16 : 0;
  const height = 84 + top;
  const root = plotRoot(l.width, height, "values", `The positive values of ${t.name}`,
    `${s.positives.length} positive finite values from ${formatLimit(s.positives[0])} to ${formatLimit(s.positives[s.positives.length - 1])} on a log2 axis; ` +
    `${s.subnormals} subnormal codes, drawn shorter.`, { "data-positives": s.positives.length });
  if (l.narrow) root.append(svg("text", { x: 4, y: 12, class: "label" }, "positive values"));
  else {
    root.append(svg("text", { x: 8, y: 30, class: "label" }, "positive"));
    root.append(svg("text", { x: 8, y: 44, class: "label" }, "values"));
  }
  const normals = s.positives.filter((v) => !s.subnormalValues.has(v));
  const subnormals = s.positives.filter((v) => s.subnormalValues.has(v));
  root.append(ticks(a, normals, top + 14, top + 54, "tick-normal"));
  root.append(ticks(a, subnormals, top + 24, top + 54, "tick-subnormal"));
  root.append(xAxis(a, top + 58));
  return root;
}

const ERROR_LO = -14;
const ERROR_HI = 1;
/** Samples of the error plot: at least this many in all, and per binade (e8m0 spans 260 binades). */
const MIN_SAMPLES = 1200;
const SAMPLES_PER_BINADE = 32;

/**
 * The relative error |cast(x) - x| / x for x from just below the format's smallest positive value
 * to past its largest, on log2 scales. Points where x becomes inf or NaN are marked along the top.
 */
export function errorPlot(t: DType, options: CastOptions, l: Layout): SVGElement {
  const [lo, hi] = formatRange(t);
  const a = axis(l, lo, hi);
  // The min/max labels sit in a band of their own above the plot, where the curve never goes.
  const top = 30;
  const bottom = 208;
  const height = bottom + 40;
  const y = (log2e: number) => top + ((ERROR_HI - Math.min(ERROR_HI, Math.max(ERROR_LO, log2e))) / (ERROR_HI - ERROR_LO)) * (bottom - top);
  const samples = Math.max(MIN_SAMPLES, (hi - lo) * SAMPLES_PER_BINADE);
  const xs = new Float64Array(samples);
  for (let i = 0; i < samples; i++) xs[i] = 2 ** (lo + ((hi - lo) * (i + 0.5)) / samples);
  const ys = cast(Tensor.fromStorage(xs, "float64", [samples]), t, options).toValues() as number[];

  const m = t.format!.manBits;
  const root = plotRoot(l.width, height, "error", `Relative error of rounding to ${t.name}`,
    `For x from ${formatLimit(2 ** lo)} to ${formatLimit(2 ** hi)} (log2 axis), |cast(x) - x| / x on a log2 axis from 2^${ERROR_LO} to 2; ` +
    (m > 0 ? `inside the range it stays under half an ulp, 2^-${m + 1}. ` : "") + "Marks along the top: x became inf or NaN.",
    { "data-samples": samples, "data-samples-per-binade": samples / (hi - lo) });
  const grid = svg("g", { class: "axis" });
  for (let k = ERROR_LO; k <= ERROR_HI; k += 3) {
    grid.append(svg("line", { x1: l.left, x2: l.width - l.right, y1: crisp(y(k)), y2: crisp(y(k)), class: "grid" }));
    grid.append(svg("text", { x: l.left - 4, y: y(k) + 4, "text-anchor": "end" }, k === 0 ? "1" : `2^${k}`));
  }
  grid.append(svg("text", { x: 4, y: 12, class: "label" }, l.narrow ? "relative error" : "relative"));
  if (!l.narrow) grid.append(svg("text", { x: 4, y: 26, class: "label" }, "error"));
  root.append(grid);
  if (m > 0) {
    root.append(svg("line", { x1: l.left, x2: l.width - l.right, y1: y(-(m + 1)), y2: y(-(m + 1)), class: "bound" }));
    root.append(svg("text", { x: l.width - l.right - 4, y: y(-(m + 1)) - 4, "text-anchor": "end", class: "bound-label" },
      `half an ulp: 2^-${m + 1}`));
  }
  let d = "";
  let pen = false;
  let bad = "";
  for (let i = 0; i < samples; i++) {
    const px = a.x(Math.log2(xs[i]));
    const v = ys[i];
    if (!Number.isFinite(v)) {
      bad += `M${crisp(px)} ${top}V${top + 10}`;
      pen = false;
      continue;
    }
    const e = Math.abs(v - xs[i]) / xs[i];
    const py = y(e === 0 ? -Infinity : Math.log2(e)).toFixed(1);
    d += `${pen ? "L" : "M"}${px.toFixed(1)} ${py}`;
    pen = true;
  }
  root.append(svg("path", { d, class: "error-line" }));
  if (bad) root.append(svg("path", { d: bad, class: "error-bad" }));
  const s = formatStats(t);
  for (const [v, label] of [[s.positives[0], "min"], [s.positives[s.positives.length - 1], "max"]] as const) {
    const px = crisp(a.x(Math.log2(v)));
    root.append(svg("line", { x1: px, x2: px, y1: top - 12, y2: bottom, class: "limit" }));
    const side = label === "min" ? { x: px + 3, "text-anchor": "start" } : { x: px - 3, "text-anchor": "end" };
    root.append(svg("text", { ...side, y: top - 4, class: "limit-label", "data-limit": label }, `${label} ${formatLimit(v)}`));
  }
  root.append(xAxis(a, bottom + 4));
  return root;
}

/**
 * Every format's positive values on one shared axis: range and density at a glance. Each row is a
 * button (click, or Enter / Space) that picks its format.
 */
export function comparePlot(selected: DType, onPick: (t: DType) => void, l: Layout): SVGElement {
  const a = axis(l, -140, 130);
  // Narrow: the name above the ticks, which then span the whole width.
  const row = l.narrow ? 34 : 24;
  const height = FORMATS.length * row + 30;
  const root = plotRoot(l.width, height, "compare", "All small float formats on one log2 axis",
    "One row per format, a tick per positive value, from 2^-140 to 2^130. Each row is a button that picks the format above.", { role: "group" });
  FORMATS.forEach((t, i) => {
    const s = formatStats(t);
    const y0 = 4 + i * row;
    const picked = t === selected;
    const g = svg("g", {
      class: picked ? "compare-row selected" : "compare-row", "data-format": t.name, tabindex: 0, role: "button",
      "aria-pressed": String(picked), "aria-label": `${t.name}: ${s.positives.length} positive values from ${formatLimit(s.positives[0])} to ${formatLimit(s.positives[s.positives.length - 1])}`,
    });
    g.append(svg("rect", { x: 0, y: y0 - 2, width: l.width, height: row, class: "row-bg" }));
    const tickTop = l.narrow ? y0 + 14 : y0 + 2;
    g.append(svg("text", { x: l.narrow ? 4 : 8, y: y0 + (l.narrow ? 10 : 14), class: "label" }, t.name));
    g.append(ticks(a, s.positives.filter((v) => !s.subnormalValues.has(v)), tickTop, y0 + row - 6, "tick-normal"));
    g.append(ticks(a, s.positives.filter((v) => s.subnormalValues.has(v)), tickTop + 4, y0 + row - 6, "tick-subnormal"));
    g.addEventListener("click", () => onPick(t));
    g.addEventListener("keydown", (e) => {
      if (e.key !== "Enter" && e.key !== " ") return;
      e.preventDefault();
      onPick(t);
    });
    root.append(g);
  });
  root.append(xAxis(a, FORMATS.length * row + 6));
  return root;
}

const CODES_PER_ROW = 8;

/** Every code of a format of 8 bits or fewer, eight to a row, with its value and kind. */
export function codeTable(t: DType): HTMLElement {
  const f = t.format!;
  const codes = 2 ** t.bits;
  const table = el("table", { class: "codes", "data-format": t.name });
  table.append(el("caption", { class: "note" }, `Every code of ${t.name} and its value`));
  const head = el("tr", {}, el("th", { scope: "col" }, "code"));
  for (let c = 0; c < Math.min(CODES_PER_ROW, codes); c++) head.append(el("th", { scope: "col" }, `+${c}`));
  table.append(head);
  for (let base = 0; base < codes; base += CODES_PER_ROW) {
    const tr = el("tr", {}, el("th", { scope: "row" }, formatHex(BigInt(base), t)));
    for (let c = base; c < Math.min(base + CODES_PER_ROW, codes); c++) {
      const v = decodeFloat(f, c);
      const text = formatNumber(v, v !== v && c >= 2 ** (t.bits - 1) && f.signed && f.nan !== "negativeZero");
      // Far powers of two read better as 2^k (e8m0's codes are all powers of two); the title has the digits.
      const shown = Number.isFinite(v) && v !== 0 ? formatLimit(v) : text;
      tr.append(el("td", { class: `code-${codeClass(t, c)}`, "data-code": c, "data-value": text, title: `${formatHex(BigInt(c), t)} = ${text}` }, shown));
    }
    table.append(tr);
  }
  return table;
}
