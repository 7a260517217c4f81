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
  if (Number.isInteger(k) && (k <= -10 || k >= 16)) return `${x < 0 ? "-" : ""}2^${k}`;
  return formatNumber(x);
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(c);
  return e;
}

const WIDTH = 960;
const LEFT = 110;
const RIGHT = 20;

interface Axis {
  readonly lo: number;
  readonly hi: number;
  x(log2v: number): number;
}

function axis(lo: number, hi: number): Axis {
  const span = WIDTH - LEFT - RIGHT;
  return { lo, hi, x: (l) => LEFT + ((l - lo) / (hi - lo)) * span };
}

/** A step between labelled powers of two giving at most ~12 labels. */
function labelStep(lo: number, hi: number): number {
  for (const step of [1, 2, 4, 5, 8, 10, 16, 20, 32, 40, 64]) if ((hi - lo) / step <= 12) return step;
  return 128;
}

function xAxis(a: Axis, y: number): SVGElement {
  const g = svg("g", { class: "axis" });
  g.append(svg("line", { x1: LEFT, x2: WIDTH - RIGHT, y1: y, y2: y }));
  const step = labelStep(a.lo, a.hi);
  for (let k = Math.ceil(a.lo / step) * step; k <= a.hi; k += step) {
    const x = a.x(k);
    g.append(svg("line", { x1: x, x2: x, y1: y, y2: y + 4 }));
    g.append(svg("text", { x, y: y + 16, "text-anchor": "middle" }, k === 0 ? "1" : `2^${k}`));
  }
  return g;
}

/** One path of vertical ticks, one per pixel column (31744 float16 values make ~800 ticks). */
function ticks(a: Axis, values: readonly number[], y0: number, y1: number, cls: string): SVGElement {
  const columns = new Set<number>();
  for (const v of values) columns.add(Math.round(a.x(Math.log2(v)) * 2) / 2);
  let d = "";
  for (const x of columns) d += `M${x} ${y0}V${y1}`;
  return svg("path", { d, class: cls });
}

/** The x range of a format: a binade of margin around its smallest positive and largest value. */
function formatRange(t: DType): [number, number] {
  const s = formatStats(t);
  const lo = Math.floor(Math.log2(s.positives[0])) - 1;
  const hi = Math.ceil(Math.log2(s.positives[s.positives.length - 1])) + 1;
  return [lo, hi];
}

/** Every positive representable value of `t` as a tick on a log2 axis (negative values mirror them). */
export function valuesPlot(t: DType): SVGElement {
  const s = formatStats(t);
  const a = axis(...formatRange(t));
  const height = 84;
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${height}`, width: WIDTH, height, class: "plot", "data-plot": "values", "data-positives": s.positives.length });
  root.append(svg("text", { x: 8, y: 30, class: "label" }, "positive"));
  root.append(svg("text", { x: 8, y: 44, class: "label" }, "values"));
  const normals = s.positives.filter((v) => !s.subnormalValues.has(v));
  const subnormals = s.positives.filter((v) => s.subnormalValues.has(v));
  root.append(ticks(a, normals, 14, 54, "tick-normal"));
  root.append(ticks(a, subnormals, 24, 54, "tick-subnormal"));
  root.append(xAxis(a, 58));
  return root;
}

const ERROR_LO = -14;
const ERROR_HI = 1;
const SAMPLES = 1200;

/**
 * The relative error |cast(x) - x| / x for x from just below the format's smallest positive value
 * to past its largest, on log2 scales. Points where x becomes inf or NaN are marked along the top.
 */
export function errorPlot(t: DType, options: CastOptions): SVGElement {
  const [lo, hi] = formatRange(t);
  const a = axis(lo, hi);
  const height = 230;
  const top = 12;
  const bottom = 190;
  const y = (log2e: number) => top + ((ERROR_HI - Math.min(ERROR_HI, Math.max(ERROR_LO, log2e))) / (ERROR_HI - ERROR_LO)) * (bottom - top);
  const xs = new Float64Array(SAMPLES);
  for (let i = 0; i < SAMPLES; i++) xs[i] = 2 ** (lo + ((hi - lo) * (i + 0.5)) / SAMPLES);
  const ys = cast(Tensor.fromStorage(xs, "float64", [SAMPLES]), t, options).toValues() as number[];

  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${height}`, width: WIDTH, height, class: "plot", "data-plot": "error" });
  const grid = svg("g", { class: "axis" });
  for (let k = ERROR_LO; k <= ERROR_HI; k += 3) {
    grid.append(svg("line", { x1: LEFT, x2: WIDTH - RIGHT, y1: y(k), y2: y(k), class: "grid" }));
    grid.append(svg("text", { x: LEFT - 6, y: y(k) + 4, "text-anchor": "end" }, k === 0 ? "1" : `2^${k}`));
  }
  grid.append(svg("text", { x: 8, y: top + 8, class: "label" }, "relative"));
  grid.append(svg("text", { x: 8, y: top + 22, class: "label" }, "error"));
  root.append(grid);
  const m = t.format!.manBits;
  if (m > 0) {
    root.append(svg("line", { x1: LEFT, x2: WIDTH - RIGHT, y1: y(-(m + 1)), y2: y(-(m + 1)), class: "bound" }));
    root.append(svg("text", { x: WIDTH - RIGHT - 4, y: y(-(m + 1)) - 4, "text-anchor": "end", class: "bound-label" },
      `half an ulp: 2^-${m + 1}`));
  }
  let d = "";
  let pen = false;
  let bad = "";
  for (let i = 0; i < SAMPLES; i++) {
    const px = a.x(Math.log2(xs[i]));
    const v = ys[i];
    if (!Number.isFinite(v)) {
      bad += `M${px.toFixed(1)} ${top}V${top + 10}`;
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
    const px = a.x(Math.log2(v));
    root.append(svg("line", { x1: px, x2: px, y1: top, y2: bottom, class: "limit" }));
    const side = label === "min" ? { x: px + 3, "text-anchor": "start" } : { x: px - 3, "text-anchor": "end" };
    root.append(svg("text", { ...side, y: bottom - 4, class: "limit-label" }, `${label} ${formatLimit(v)}`));
  }
  root.append(xAxis(a, bottom + 4));
  return root;
}

/** Every format's positive values on one shared axis: range and density at a glance. */
export function comparePlot(selected: DType, onPick: (t: DType) => void): SVGElement {
  const a = axis(-140, 130);
  const row = 24;
  const height = FORMATS.length * row + 30;
  const root = svg("svg", { viewBox: `0 0 ${WIDTH} ${height}`, width: WIDTH, height, class: "plot", "data-plot": "compare" });
  FORMATS.forEach((t, i) => {
    const s = formatStats(t);
    const y0 = 4 + i * row;
    const g = svg("g", { class: t === selected ? "compare-row selected" : "compare-row", "data-format": t.name });
    g.append(svg("rect", { x: 0, y: y0 - 2, width: WIDTH, height: row, class: "row-bg" }));
    g.append(svg("text", { x: 8, y: y0 + 14, class: "label" }, t.name));
    g.append(ticks(a, s.positives.filter((v) => !s.subnormalValues.has(v)), y0 + 2, y0 + row - 6, "tick-normal"));
    g.append(ticks(a, s.positives.filter((v) => s.subnormalValues.has(v)), y0 + 6, y0 + row - 6, "tick-subnormal"));
    g.addEventListener("click", () => onPick(t));
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
  const head = el("tr", {}, el("th", {}, ""));
  for (let c = 0; c < Math.min(CODES_PER_ROW, codes); c++) head.append(el("th", {}, `+${c}`));
  table.append(head);
  for (let base = 0; base < codes; base += CODES_PER_ROW) {
    const tr = el("tr", {}, el("th", {}, formatHex(BigInt(base), t)));
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
