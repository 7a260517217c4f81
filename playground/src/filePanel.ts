/**
 * The "A model file, opened here" panel: a GGUF, safetensors or ONNX file picked or dropped, read in
 * the page (nothing is uploaded): its metadata, its tensors, and a chosen tensor's histogram and
 * statistics, with its error against a reference file holding a tensor of the same name.
 */
import { formatNumber } from "tensorcast";
import { byId, el } from "./dom.js";
import { errorText } from "./format.js";
import { BINS, tensorStats, type ErrorStats, type Histogram, type TensorStats } from "./fileStats.js";
import { openModelFile, type ModelFile } from "./modelFile.js";
import { track, view, type Job } from "./schedule.js";

const SVG = "http://www.w3.org/2000/svg";
/** The tensor table lists at most this many rows (the select holds every tensor). */
const MAX_ROWS = 5000;

let model: ModelFile | undefined;
let reference: ModelFile | undefined;
/** The last statistics shown, for the browser tests. */
let shown: { tensor: string; stats: TensorStats; error?: ErrorStats } | undefined;

function svg(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(c);
  return e;
}

/** A table with a caption for screen readers, each row headed by its first cell, in a box that scrolls sideways. */
export function table(caption: string, head: readonly string[], rows: readonly (readonly string[])[], id: string): HTMLElement {
  const t = el("table", { id, class: "file-table" },
    el("caption", { class: "sr-only" }, caption),
    el("thead", {}, el("tr", {}, ...head.map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map((c, k) => (k === 0 ? el("th", { scope: "row" }, c) : el("td", {}, c)))))));
  return el("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": caption }, t);
}

let plotIds = 0;

/** A histogram as an SVG image: bars over [lo, hi], the range under them. */
function histogramPlot(h: Histogram, title: string, kind: string): SVGElement {
  const width = 640, height = 160, bottom = 20;
  const id = `file-plot-${++plotIds}`;
  const total = h.counts.reduce((a, b) => a + b, 0);
  const peak = Math.max(1, ...h.counts);
  const root = svg("svg", {
    viewBox: `0 0 ${width} ${height}`, width, height, class: "plot file-plot", role: "img", "data-plot": kind,
    "aria-labelledby": `${id}-title ${id}-desc`, "data-counts": h.counts.join(" "),
  });
  root.append(svg("title", { id: `${id}-title` }, title),
    svg("desc", { id: `${id}-desc` }, `${total.toLocaleString("en")} finite values in ${BINS} bins from ${formatNumber(h.lo)} to ${formatNumber(h.hi)}; the fullest bin holds ${peak.toLocaleString("en")}.`));
  const bar = width / BINS;
  h.counts.forEach((c, k) => {
    if (c === 0) return;
    const barHeight = Math.max(1, (c / peak) * (height - bottom - 4));
    root.append(svg("rect", { x: k * bar + 0.5, width: Math.max(1, bar - 1), y: height - bottom - barHeight, height: barHeight, class: "bar" }));
  });
  root.append(svg("text", { x: 2, y: height - 5, "text-anchor": "start" }, formatNumber(h.lo)),
    svg("text", { x: width - 2, y: height - 5, "text-anchor": "end" }, formatNumber(h.hi)));
  return root;
}

/** A statistic as a dt / dd pair; the exact value in data-value (JavaScript's shortest round trip). */
function stat(name: string, v: number, id: string): HTMLElement[] {
  const exact = Object.is(v, -0) ? "-0" : String(v);
  return [el("dt", {}, name), el("dd", { id, "data-value": exact }, Number.isInteger(v) && !Object.is(v, -0) && Math.abs(v) < 2 ** 53 ? v.toLocaleString("en") : formatNumber(v))];
}

function showError(e: unknown): void {
  const line = byId("mf-error", HTMLParagraphElement);
  line.textContent = errorText(e);
  line.hidden = false;
}

function renderFile(): void {
  const f = model;
  const meta = byId("mf-meta", HTMLDivElement);
  const list = byId("mf-tensors", HTMLDivElement);
  const select = byId("mf-tensor", HTMLSelectElement);
  if (!f) {
    meta.replaceChildren();
    list.replaceChildren();
    select.replaceChildren();
    return;
  }
  byId("mf-summary", HTMLParagraphElement).textContent =
    `${f.name}: ${f.format}, ${f.size.toLocaleString("en")} bytes, ${f.tensors.length.toLocaleString("en")} tensors, ${f.metadata.length.toLocaleString("en")} metadata entries.`;
  meta.replaceChildren(f.metadata.length === 0 ? el("p", { class: "note" }, "No metadata.") :
    table(`${f.name}'s metadata`, ["key", "type", "value"], f.metadata.map((m) => [m.key, m.type, m.value]), "mf-meta-table"));
  const rows = f.tensors.slice(0, MAX_ROWS).map((t) => [t.name, t.type, t.shape.length === 0 ? "scalar" : t.shape.join(" \u00d7 "), t.bytes.toLocaleString("en"), formatNumber(t.bitsPerWeight)]);
  list.replaceChildren(table(`${f.name}'s tensors`, ["name", "type", "shape", "bytes", "bits per weight"], rows, "mf-tensor-table"),
    ...(f.tensors.length > MAX_ROWS ? [el("p", { class: "note" }, `The first ${MAX_ROWS.toLocaleString("en")} of ${f.tensors.length.toLocaleString("en")} tensors; the list below holds them all.`)] : []));
  select.replaceChildren(...f.tensors.map((t, i) => el("option", { value: i }, t.name)));
  select.disabled = f.tensors.length === 0;
}

async function renderStats(job: Job): Promise<void> {
  const box = byId("mf-stats", HTMLDivElement);
  const f = model;
  const i = Number(byId("mf-tensor", HTMLSelectElement).value);
  if (!f || f.tensors.length === 0 || !Number.isInteger(i) || !f.tensors[i]) {
    box.replaceChildren();
    shown = undefined;
    return;
  }
  const t = f.tensors[i];
  const status = byId("mf-status", HTMLParagraphElement);
  status.textContent = `Reading ${t.name}\u2026`;
  try {
    const { stats, error, refNote } = await tensorStats(f, i, reference, () => job.yield());
    shown = { tensor: t.name, stats, error };
    const parts: Node[] = [
      el("h3", {}, `${t.name} (${t.type})`),
      el("dl", { class: "file-stats", id: "mf-stat-list" },
        ...stat("elements", stats.elements, "mf-elements"), ...stat("min", stats.min, "mf-min"), ...stat("max", stats.max, "mf-max"),
        ...stat("mean", stats.mean, "mf-mean"), ...stat("NaN", stats.nan, "mf-nan"), ...stat("+inf", stats.posInf, "mf-pos-inf"), ...stat("\u2212inf", stats.negInf, "mf-neg-inf")),
      histogramPlot(stats.histogram, `histogram of ${t.name}'s values`, "file-values"),
    ];
    if (refNote) parts.push(el("p", { class: "note" }, refNote));
    if (error) {
      parts.push(el("h3", {}, `error against ${error.reference}`),
        el("dl", { class: "file-stats", id: "mf-error-list" },
          ...stat("max abs error", error.maxAbs, "mf-max-abs"), ...stat("max rel error", error.maxRel, "mf-max-rel"), ...stat("NaN / inf mismatches", error.mismatched, "mf-mismatched")),
        histogramPlot(error.histogram, `histogram of ${t.name} minus ${error.reference}'s`, "file-errors"));
    }
    box.replaceChildren(...parts);
    status.textContent = `${t.name}: ${stats.elements.toLocaleString("en")} values read.`;
  } catch (e) {
    box.replaceChildren();
    shown = undefined;
    status.textContent = "";
    // A cancelled redraw rethrows for the slicer; a file's error is shown.
    if (job.cancelled) throw e;
    showError(e);
  }
}

const statsView = view((job) => renderStats(job), showError);

async function open(file: File, as: "model" | "reference"): Promise<void> {
  const line = byId("mf-error", HTMLParagraphElement);
  line.hidden = true;
  const status = byId("mf-status", HTMLParagraphElement);
  status.textContent = `Opening ${file.name}\u2026`;
  try {
    const opened = await openModelFile(file);
    if (as === "model") {
      model = opened;
      renderFile();
    } else reference = opened;
    status.textContent = `${file.name} opened.`;
  } catch (e) {
    if (as === "model") {
      model = undefined;
      renderFile();
      byId("mf-summary", HTMLParagraphElement).textContent = "";
    } else reference = undefined;
    status.textContent = "";
    showError(e);
  }
  statsView.now();
}

/** Wires the panel's inputs, its drop zone and its tensor choice. */
export function wireFilePanel(): void {
  for (const [id, as] of [["mf-file", "model"], ["mf-ref", "reference"]] as const) {
    const input = byId(id, HTMLInputElement);
    input.addEventListener("change", () => {
      const file = input.files?.[0];
      if (file) void track(open(file, as));
    });
  }
  const zone = byId("mf-drop", HTMLDivElement);
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    zone.classList.add("dragging");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("dragging");
    const files = e.dataTransfer?.files;
    if (files?.[0]) void track(open(files[0], "model"));
    if (files?.[1]) void track(open(files[1], "reference"));
  });
  byId("mf-tensor", HTMLSelectElement).addEventListener("input", () => statsView.now());
}

/** For the browser tests: the statistics on show. */
export function shownStats(): typeof shown {
  return shown;
}
