/**
 * The playground page: wires the controls in index.html to its views (a value in every type, a
 * code bit by bit, a format's values and rounding error, every format side by side, the tensor
 * box). Input redraws a view after a short pause, in slices (schedule.ts); the tensor box works
 * in a Web Worker; tables are paged, so the page stays small and quick whatever is pasted. The
 * controls are the only state, and the URL keeps them (state.ts).
 */
import {
  DTYPES, LATEST_OPSET, dtype, formatError, operatorVersion, quantizeOperatorVersion, type DType, type RoundMode, type BitcastSemantics, type Tensor,
} from "tensorcast";
import { byId, el, fillSelect } from "./dom.js";
import { castOptions, explain, readLongValueList, readValueList, type ExplainOptions, type Explained, type TypeRow } from "./explain.js";
import { errorText } from "./format.js";
import { guardLongPaste, LARGE_PASTE } from "./paste.js";
import { formatTable } from "./formatTable.js";
import { checkWidth, INSPECTABLE, inspect, readCode, typedCode, type Inspected } from "./inspector.js";
import { codeTable, comparePlot, errorPlot, FORMATS, formatLimit, formatStats, layout, valuesPlot } from "./plot.js";
import { settled, sliceStats, track, view, type Job } from "./schedule.js";
import { MAX_LINK_TEXT, restoreState, saveState } from "./state.js";
import { MAX_TENSOR_TEXT, MAX_TENSOR_VALUES, shapeForPaste, TENSOR_OPS, type Failure, type TensorOp, type TensorRequest } from "./tensorBox.js";
import { pager, tensorTable } from "./tensorTable.js";
import { fromWire, runToWire, type WireOutcome } from "./wire.js";
import { quantizeOutputTypes, SCALE_TYPES } from "./quantBox.js";
import { shownStats, wireFilePanel } from "./filePanel.js";
import { wireGgufPanel } from "./ggufPanel.js";
import { wireHfPanel } from "./hfPanel.js";

/** The order rows are shown in: floats widest first, then signed and unsigned integers, bool, string, complex. */
const ORDER = [
  "float64", "float32", "float16", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
  "float8e8m0", "float6e2m3", "float6e3m2", "float4e2m1", "int64", "int32", "int16", "int8", "int4", "int2",
  "uint64", "uint32", "uint16", "uint8", "uint4", "uint2", "bool", "string", "complex64", "complex128",
];
const rank = (t: DType) => (ORDER.includes(t.name) ? ORDER.indexOf(t.name) : ORDER.length + t.onnx);
const SHOWN: readonly DType[] = [...DTYPES].sort((a, b) => rank(a) - rank(b));
/** Values explained per page: 8 values are 8 tables of 28 rows, about 1,600 cells. */
const VALUES_PER_PAGE = 8;

const value = (id: string) => (document.getElementById(id) as HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement).value;
const checked = (id: string) => byId(id, HTMLInputElement).checked;

/** Shows a failure of the page's own code in the view's error line, instead of leaving it stale. */
function failed(errorId: string): (e: unknown) => void {
  return (e) => {
    const line = byId(errorId, HTMLParagraphElement);
    line.textContent = `the page failed: ${errorText(e)}`;
    line.hidden = false;
    console.error(e);
  };
}

function ok(errorId: string): void {
  byId(errorId, HTMLParagraphElement).hidden = true;
}

/** A box that scrolls sideways on its own (a wide table on a phone), reachable by keyboard to scroll. */
function scrollBox(label: string, child: HTMLElement): HTMLElement {
  return el("div", { class: "scroll", tabindex: 0, role: "region", "aria-label": label }, child);
}

// ---- Controls ---------------------------------------------------------------------------------

// Registered before the wiring below, so a long paste is moved out before the redraw is asked for.
const explorerValues = guardLongPaste(byId("values", HTMLTextAreaElement), "pasted", () => explorerView.now());
const fromSelect = byId("from", HTMLSelectElement);
const saturateInput = byId("saturate", HTMLInputElement);
const roundModeSelect = byId("round-mode", HTMLSelectElement);
const opsetInput = byId("opset", HTMLInputElement);
const results = byId("results", HTMLDivElement);
const formatSelect = byId("format", HTMLSelectElement);
const inspectType = byId("i-type", HTMLSelectElement);
const inspectInput = byId("i-input", HTMLInputElement);

fillSelect(fromSelect, SHOWN.filter((t) => t.kind !== "string" && t.kind !== "complex").map((t) => t.name), "float64");
fillSelect(formatSelect, FORMATS.map((t) => t.name), "float8e4m3fn");
fillSelect(inspectType, SHOWN.filter((t) => INSPECTABLE.includes(t)).map((t) => t.name), "float16");
const tensorTypes = SHOWN.map((t) => t.name);
fillSelect(byId("t-dtype", HTMLSelectElement), tensorTypes, "float32");
fillSelect(byId("t-op", HTMLSelectElement), TENSOR_OPS, "cast");
fillSelect(byId("t-cast-to", HTMLSelectElement), tensorTypes, "float8e4m3fn");
fillSelect(byId("t-bitcast-to", HTMLSelectElement), tensorTypes, "uint8");
fillSelect(byId("t-promote-with", HTMLSelectElement), tensorTypes, "float16");
fillSelect(byId("t-q-scale-type", HTMLSelectElement), SCALE_TYPES, "float32");
fillSelect(byId("t-q-output", HTMLSelectElement), SHOWN.map((t) => t.name).filter((n) => quantizeOutputTypes().includes(n)), "int8");
for (const [id, first] of [["t-q-precision", "the scale's type"], ["t-q-deq-output", "the scale's type"]] as const) {
  const select = byId(id, HTMLSelectElement);
  fillSelect(select, ["", "float32", "float16", "bfloat16"]);
  select.options[0].textContent = first;
}

restoreState(document, location.hash);

// ---- A value in every data type --------------------------------------------------------------

/** The opset as typed, or why it is not one (never silently replaced by the newest). */
function readOpset(): { opset: number; past?: string } | { error: string } {
  const text = opsetInput.value.trim();
  if (text === "") return { opset: LATEST_OPSET };
  if (!/^[+-]?\d+$/.test(text)) return { error: `opset ${JSON.stringify(text)} is not a whole number; Cast has opsets 1 to ${LATEST_OPSET}` };
  const opset = Number(text);
  try {
    operatorVersion("Cast", opset);
  } catch (e) {
    return { error: `opset ${text}: ${errorText(e)}` };
  }
  // ONNX runs the newest Cast at or below the opset; past the newest opset the library knows, that
  // is a guess about opsets not yet written, so the page says so.
  return opset > LATEST_OPSET ? { opset, past: `opset ${opset} is past the newest opset tensorcast knows (${LATEST_OPSET}), so this is the newest Cast` } : { opset };
}

function explainOptions(opset: number): ExplainOptions {
  return { from: dtype(fromSelect.value), saturate: saturateInput.checked, roundMode: roundModeSelect.value as RoundMode, opset };
}

let explorerPage = 0;
let explorerText = "";

async function renderExplorer(job: Job): Promise<void> {
  const status = byId("explorer-status", HTMLParagraphElement);
  const opsetError = byId("opset-error", HTMLParagraphElement);
  const notes = byId("list-notes", HTMLDivElement);
  const o = readOpset();
  opsetInput.setAttribute("aria-invalid", String("error" in o));
  if ("error" in o) {
    opsetError.textContent = o.error;
    opsetError.hidden = false;
    opsetError.dataset.error = o.error;
    // The note keeps its place (the controls do not move); it says there is no Cast to show.
    byId("cast-version", HTMLSpanElement).textContent = "Cast-?: no such opset";
    results.replaceChildren();
    notes.replaceChildren();
    status.textContent = "No results: the opset is not one Cast has.";
    return;
  }
  opsetError.hidden = true;
  const options = explainOptions(o.opset);
  const version = operatorVersion("Cast", options.opset);
  saturateInput.disabled = !version.attributes.has("saturate");
  roundModeSelect.disabled = !version.attributes.has("round_mode");
  byId("cast-version", HTMLSpanElement).textContent =
    `Cast-${version.version}: saturate ${saturateInput.disabled ? "n/a" : options.saturate}, round_mode ${roundModeSelect.disabled ? "n/a" : options.roundMode}` +
    (o.past ? ` (${o.past})` : "");
  const text = explorerValues.text;
  if (text !== explorerText) {
    explorerText = text;
    explorerPage = 0;
  }
  const refuse = (error: string) => {
    results.replaceChildren(el("p", { class: "error", "data-error": error }, error));
    status.textContent = `The list cannot be read: ${error}`;
  };
  // The same limits as the tensor box: past them the page would work for seconds to show 8 values.
  if (text.length > MAX_TENSOR_TEXT) {
    notes.replaceChildren();
    return refuse(`${text.length.toLocaleString("en")} characters of values: the explorer reads up to ${MAX_TENSOR_TEXT.toLocaleString("en")}`);
  }
  const list = text.length < LARGE_PASTE ? readValueList(text) : await readLongValueList(text, () => job.yield());
  notes.replaceChildren(...list.notes.map((n) => el("p", { class: "note list-note" }, n)));
  if (list.error) return refuse(list.error);
  if (list.tokens.length > MAX_TENSOR_VALUES) {
    return refuse(`${list.tokens.length.toLocaleString("en")} values: the explorer reads up to ${MAX_TENSOR_VALUES.toLocaleString("en")}; the library itself has no such limit`);
  }
  const tokens = list.tokens;
  const pages = Math.max(1, Math.ceil(tokens.length / VALUES_PER_PAGE));
  explorerPage = Math.min(Math.max(0, explorerPage), pages - 1);
  const from = explorerPage * VALUES_PER_PAGE;
  const shown = tokens.slice(from, from + VALUES_PER_PAGE);
  let refused = 0;
  const where = `values ${from + 1}–${from + shown.length} of ${tokens.length}`;
  const nav = () => pages > 1 ? [pager(explorerPage, pages, where, (p) => { explorerPage = p; explorerView.now(); })] : [];
  const top = el("div", { class: "pager-box" }, ...nav());
  const bottom = el("div", { class: "pager-box" }, ...nav());
  if (results.firstElementChild?.classList.contains("pager-box")) results.firstElementChild.replaceWith(top);
  else results.prepend(top);
  // Blocks are replaced one by one, each laid out in its own slice: all eight at once would be one
  // long layout (1,600 table cells) between two frames.
  let at = top.nextElementSibling;
  for (const token of shown) {
    await job.yield();
    const x = explain(token, options);
    if (x.error) refused++;
    const block = valueBlock(x, options.from);
    if (at && at.classList.contains("value-block")) at.replaceWith(block);
    else if (at) at.before(block);
    else results.append(block);
    at = block.nextElementSibling;
    void results.offsetHeight;
  }
  while (at) {
    const next = at.nextElementSibling;
    at.remove();
    at = next;
  }
  if (tokens.length === 0) results.append(el("p", { class: "note" }, "Type a number, or paste a list."));
  results.append(bottom);
  status.textContent = tokens.length === 0 ? "No values." :
    `${tokens.length} value${tokens.length === 1 ? "" : "s"} in ${options.from.name}; showing ${where}` + (refused ? `; ${refused} of them cannot be read or stored` : "") + ".";
}

function valueBlock(x: Explained, from: DType): HTMLElement {
  const block = el("section", {
    class: "value-block", "data-input": x.input, "data-source": x.source, "data-source-changed": String(x.sourceChanged),
    "data-reading-note": x.readingNote,
  });
  if (x.error) {
    const library = x.errorCode ? `TensorcastError ${x.errorCode}: ${x.errorMessage}` : x.error;
    block.append(el("h3", {}, el("code", {}, x.input)), el("p", { class: "error", "data-error": library, "data-shown": x.error }, x.error));
    return block;
  }
  const changed = x.readingNote ? ` (changed by storing it: ${x.readingNote})` : x.sourceChanged ? " (changed by storing it)" : "";
  block.append(el("h3", {},
    el("code", {}, x.input), x.isCode ? ` read as a ${from.name} code is ` : ` stored as ${from.name} is `, el("code", { class: "source" }, x.source),
    ...(changed ? [el("span", { class: "changed" }, changed)] : [])));
  const table = el("table", { class: "explain" });
  table.append(el("colgroup", {}, ...["type", "code", "bits", "value", "abs", "rel", "what"].map((c) => el("col", { class: `c-${c}` }))));
  const heads = [["type", "type"], ["code", "code"], ["bits", "bits"], ["value", "value"], ["abs", "abs error"], ["rel", "rel error"], ["what", "what happened"]];
  table.append(el("tr", { class: "head" }, ...heads.map(([c, h]) => el("th", { scope: "col", class: `h-${c}` }, h))));
  const byName = new Map(x.rows.map((r) => [r.type.name, r]));
  for (const t of SHOWN) table.append(typeRow(byName.get(t.name)!));
  block.append(scrollBox(`${x.input} in every type`, table));
  return block;
}

function bitsCell(fields: Inspected["fields"] | TypeRow["fields"]): HTMLElement {
  const bits = el("td", { class: "bits" });
  fields.forEach((f, i) => {
    if (i > 0) bits.append(el("span", { class: "sep" }, "|"));
    bits.append(el("span", { class: `f-${f.kind}` }, f.bits));
  });
  return bits;
}

function typeRow(r: TypeRow): HTMLTableRowElement {
  const name = el("th", { class: "type", scope: "row" }, r.type.name);
  if (r.error) {
    return el("tr", { "data-type": r.type.name, "data-error": r.errorMessage ?? r.error, "data-error-code": r.errorCode },
      name, el("td", { colspan: 6, class: "error" }, r.error));
  }
  const flag = r.flag ? [el("span", { class: `flag flag-${r.flag.replace(/ /g, "-")}` }, r.flag)] : [];
  // The row says why in short (a sentence made rows three lines tall); the title has the sentence.
  const why = r.why ? [el("span", { class: "why", title: r.why, "data-why": r.why }, "no NaN: writes ",
    el("span", { class: "token" }, r.code), " ", el("span", { class: "token" }, `(${r.result})`))] : [];
  return el("tr", {
    "data-type": r.type.name, "data-code": r.code, "data-value": r.result,
    "data-abs": r.absError === null ? "" : String(r.absError), "data-rel": r.relError === null ? "" : String(r.relError),
    "data-flag": r.flag,
  },
  name, el("td", { class: "code" }, r.code), bitsCell(r.fields), el("td", { class: "value" }, r.result),
  el("td", { class: "num abs" }, r.type.kind === "string" ? "" : formatError(r.absError)),
  el("td", { class: "num rel" }, r.type.kind === "string" ? "" : formatError(r.relError)),
  el("td", { class: "what" }, ...flag, ...why));
}

// ---- A code, bit by bit -----------------------------------------------------------------------

/** The inspector's type before the last change of type, until the next edit of the box (see typeNote). */
let typeChangedFrom: DType | undefined;

/**
 * What changing the inspector's type did to the box: a code (hex or binary) is kept and read in the
 * new type, a value is kept and stored in it. For a kept code, a button keeps the value instead.
 */
function typeNote(t: DType): HTMLElement[] {
  const from = typeChangedFrom;
  if (!from || from === t) return [];
  const text = inspectInput.value.trim();
  const code = typedCode(text);
  if (code === undefined) {
    return [el("p", { class: "note", "data-kept": "value" }, `Type changed from ${from.name} to ${t.name}: the value ${text} is kept and stored as ${t.name}.`)];
  }
  let old: string;
  try {
    old = inspect(from, checkWidth(text, code, from)).value;
  } catch {
    return [];
  }
  const keep = el("button", { type: "button", class: "keep-value", "data-value": old }, `keep the value ${old} instead`);
  keep.addEventListener("click", () => {
    inspectInput.value = old;
    typeChangedFrom = undefined;
    inspectorView.now();
    stateSaver.now();
  });
  return [el("p", { class: "note", "data-kept": "code" }, `Type changed from ${from.name} to ${t.name}: the code ${text} is kept (it was ${old} in ${from.name}) and read as ${t.name}. `, keep)];
}

/** The bit or step button that has the keyboard, to give it back after a redraw replaced it. */
function inspectorFocus(box: HTMLElement): string | undefined {
  const a = document.activeElement;
  if (!(a instanceof HTMLElement) || !box.contains(a)) return undefined;
  if (a.dataset.bit !== undefined) return `button.bit[data-bit="${a.dataset.bit}"]`;
  if (a.classList.contains("prev")) return "button.step.prev";
  if (a.classList.contains("next")) return "button.step.next";
  return undefined;
}

/** Arrow keys move between bits (left: more significant), Home and End to the first and last. */
function bitKeys(e: KeyboardEvent): void {
  const bit = e.target;
  if (!(bit instanceof HTMLButtonElement) || !bit.classList.contains("bit")) return;
  const bits = [...document.querySelectorAll<HTMLButtonElement>("#i-result button.bit")];
  const at = bits.indexOf(bit);
  const to = { ArrowLeft: at - 1, ArrowUp: at - 1, ArrowRight: at + 1, ArrowDown: at + 1, Home: 0, End: bits.length - 1 }[e.key];
  if (to === undefined) return;
  e.preventDefault();
  bits[Math.min(Math.max(0, to), bits.length - 1)].focus();
}

function renderInspector(): void {
  const t = dtype(inspectType.value);
  const box = byId("i-result", HTMLDivElement);
  const status = byId("inspector-status", HTMLParagraphElement);
  const focused = inspectorFocus(box);
  const changed = typeNote(t);
  let x: Inspected;
  try {
    // A value the type cannot hold is cast as the explorer casts (saturate and round_mode as set there).
    const read = readCode(inspectInput.value, t, castOptions(explainOptions(LATEST_OPSET)));
    x = inspect(t, read.code, read);
  } catch (e) {
    const text = errorText(e).replace(/^Error: /, "");
    inspectInput.setAttribute("aria-invalid", "true");
    box.replaceChildren(...changed, el("p", { class: "error", "data-error": text }, text));
    delete box.dataset.code;
    status.textContent = text;
    return;
  }
  inspectInput.setAttribute("aria-invalid", "false");
  const setCode = (code: bigint) => {
    inspectInput.value = `0x${code.toString(16).padStart(Math.ceil(t.bits / 4), "0")}`;
    typeChangedFrom = undefined;
    inspectorView.now();
    // The code is the state now: into the link at once, so a reload keeps it.
    stateSaver.now();
  };
  const bits = el("div", { class: "bit-buttons", role: "group", "aria-label": `the ${t.bits} bits of ${x.hex}, most significant first; arrow keys move between them` });
  bits.addEventListener("keydown", bitKeys);
  let position = t.bits - 1;
  for (const f of x.fields) {
    const field = el("span", { class: `field f-${f.kind}` });
    for (const b of f.bits) {
      const bit = position--;
      const button = el("button", {
        type: "button", class: `bit f-${f.kind}`, "data-bit": bit, "aria-pressed": String(b === "1"),
        "aria-label": `bit ${bit} (${f.kind}) is ${b}: flip it`,
      }, b);
      button.addEventListener("click", () => setCode(x.code ^ (1n << BigInt(bit))));
      field.append(button);
    }
    bits.append(field);
  }
  const step = (label: string, n: Inspected["prev"], cls: string) => {
    if (!n) return el("span", { class: `step ${cls} none` }, `${label}: none`);
    const b = el("button", { type: "button", class: `step ${cls}`, "data-code": n.hex, "data-value": n.value }, `${label}: ${n.value} (${n.hex})`);
    b.addEventListener("click", () => setCode(n.code));
    return b;
  };
  const facts: [string, string | HTMLElement, string][] = [
    ["code", `${x.hex} = 0b${x.code.toString(2).padStart(t.bits, "0")} = ${x.code}`, "code"],
    ["value", x.value, "value"],
    ...(x.flag ? [["cast", el("span", { class: `flag flag-${x.flag.replace(/ /g, "-")}` }, x.flag), "flag"] as [string, HTMLElement, string]] : []),
    ...(x.error ? [["rounding error", `${formatError(x.error.abs)} (relative ${formatError(x.error.rel)})`, "error"] as [string, string, string]] : []),
    ["kind", x.kind, "kind"],
    ["fields", x.breakdown, "breakdown"],
    ["exact decimal", x.exact === "" ? "-" : x.exact, "exact"],
    ["ulp", x.ulp === "" ? "-" : x.ulp, "ulp"],
  ];
  const dl = el("dl", { class: "facts" });
  for (const [k, v, id] of facts) {
    const data = id === "error" && x.error ? { "data-abs": String(x.error.abs), "data-rel": String(x.error.rel) } : {};
    dl.append(el("div", {}, el("dt", {}, k), el("dd", { "data-fact": id, ...data }, v)));
  }
  box.replaceChildren(
    ...changed,
    ...(x.note ? [el("p", { class: "note", "data-note": x.note }, x.note)] : []),
    bits, el("div", { class: "steps" }, step("previous", x.prev, "prev"), step("next", x.next, "next")), dl);
  box.dataset.code = x.hex;
  // The keyboard stays where it was: on the bit just flipped (or its place), on the step taken.
  // A step past the end (no next) leaves the keyboard on the other step.
  if (focused) (box.querySelector<HTMLElement>(focused) ?? box.querySelector<HTMLElement>("button.step"))?.focus();
  status.textContent = `${t.name} ${x.hex} is ${x.value} (${x.kind})${x.flag ? `, ${x.flag}` : ""}.`;
}

// ---- A format, all its values -----------------------------------------------------------------

let plotWidth = 0;

function renderFormat(): void {
  const t = dtype(formatSelect.value);
  const s = formatStats(t);
  const f = t.format!;
  const facts: [string, string][] = [
    ["codes", String(s.codes)], ["finite", String(s.finite)], ["zeros", String(s.zeros)],
    ["subnormal", String(s.subnormals)], ["normal", String(s.normals)], ["inf", String(s.infinities)], ["NaN", String(s.nans)],
    ["max", formatLimit(t.max as number)], ["smallest normal", formatLimit(t.minNormal!)],
    ["smallest subnormal", t.minSubnormal === undefined ? "-" : formatLimit(t.minSubnormal)],
    ["sign|exp|man", `${f.signed ? 1 : 0}|${f.expBits}|${f.manBits}`], ["bias", String(f.bias)],
  ];
  byId("format-stats", HTMLDListElement).replaceChildren(
    ...facts.map(([k, v]) => el("div", {}, el("dt", {}, k), el("dd", { "data-fact": k }, v))));
  // The plot follows the saturate and round_mode switches, at the newest Cast (which has both).
  const options = castOptions({ ...explainOptions(LATEST_OPSET) });
  plotWidth = byId("formats", HTMLElement).clientWidth;
  const l = layout(Math.min(plotWidth, 960));
  byId("values-plot", HTMLDivElement).replaceChildren(valuesPlot(t, l));
  byId("error-plot", HTMLDivElement).replaceChildren(errorPlot(t, options, l));
  byId("code-table", HTMLDivElement).replaceChildren(
    t.bits <= 8 ? scrollBox(`every code of ${t.name}`, codeTable(t)) : el("p", { class: "note" }, `${s.codes} codes: too many for a table; the plots show them all.`));
  byId("compare-plot", HTMLDivElement).replaceChildren(comparePlot(t, (picked) => {
    formatSelect.value = picked.name;
    formatView.now();
    // The row was redrawn: keep the keyboard where it was.
    queueMicrotask(() => settled().then(() => document.querySelector<SVGElement>(`svg[data-plot=compare] g[data-format="${picked.name}"]`)?.focus()));
  }, l));
}

// ---- The tensor box ---------------------------------------------------------------------------

function errorBox(f: Failure): HTMLElement {
  return el("div", { class: "error", "data-code": f.code, "data-message": f.message }, f.text);
}

// Registered before the wiring below, so a long paste is moved out before the redraw is asked for.
const tValues = guardLongPaste(byId("t-values", HTMLTextAreaElement), "t-pasted", () => tensorView.now(), () => {
  // Counting a long paste's values here would hold the page; a shape that is set is cleared (1-D).
  const shape = byId("t-shape", HTMLInputElement);
  if (shape.value.trim() !== "") shapeFromPaste("");
});

/** Sets the tensor box's shape to what a paste implies, and says so. */
function shapeFromPaste(shape: string): void {
  const box = byId("t-shape", HTMLInputElement);
  const was = box.value;
  box.value = shape;
  byId("t-shape-note", HTMLSpanElement).textContent = `shape ${shape === "" ? "cleared (1-D)" : `set to ${shape}`} to fit the paste (it was ${was})`;
}

// A paste whose values do not fit the shape box gets the shape it implies ("2 3" would refuse it).
byId("t-values", HTMLTextAreaElement).addEventListener("input", (e) => {
  const t = byId("t-values", HTMLTextAreaElement);
  if (!(e instanceof InputEvent) || e.inputType !== "insertFromPaste" || t.dataset.keptOut !== undefined) return;
  const shape = shapeForPaste(t.value, byId("t-shape", HTMLInputElement).value);
  if (shape !== undefined) shapeFromPaste(shape);
});
byId("t-shape", HTMLInputElement).addEventListener("input", () => { byId("t-shape-note", HTMLSpanElement).textContent = ""; });

function tensorRequest(): TensorRequest {
  return {
    values: tValues.text, dtype: value("t-dtype"), shape: value("t-shape"), op: value("t-op") as TensorOp,
    castTo: value("t-cast-to"), saturate: checked("t-saturate"), roundMode: value("t-round-mode") as RoundMode,
    castOpset: value("t-cast-opset"),
    reshapeShape: value("t-reshape-shape"), allowzero: checked("t-allowzero"), reshapeOpset: value("t-reshape-opset"),
    bitcastTo: value("t-bitcast-to"), semantics: value("t-semantics") as BitcastSemantics,
    promoteWith: value("t-promote-with"), promoteWithShape: value("t-promote-shape"),
    promoteUnsafe: checked("t-promote-unsafe"), pytorchScalar: checked("t-pytorch"),
    qScale: value("t-q-scale"), qScaleType: value("t-q-scale-type"), qZeroPoint: value("t-q-zero-point"), qAxis: value("t-q-axis"),
    qBlockSize: value("t-q-block-size"), qOutput: value("t-q-output"), qSaturate: checked("t-q-saturate"),
    qPrecision: value("t-q-precision"), qDeqOutput: value("t-q-deq-output"), qOpset: value("t-q-opset"),
  };
}

/** The worker, while it works: a newer request ends it (terminate) rather than waiting. */
let worker: Worker | undefined;
let workerFailed = false;
let inFlight: { resolve: (o: WireOutcome | undefined) => void } | undefined;
let requests = 0;

function startWorker(): Worker | undefined {
  if (workerFailed || typeof Worker !== "function") return undefined;
  try {
    return new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  } catch {
    workerFailed = true;
    return undefined;
  }
}

/** The box's outcome, from the worker (or here, where there is no worker); undefined if superseded. */
function runBox(r: TensorRequest): Promise<WireOutcome | undefined> {
  if (inFlight) {
    inFlight.resolve(undefined);
    inFlight = undefined;
    worker?.terminate();
    worker = undefined;
  }
  worker ??= startWorker();
  const w = worker;
  if (!w) return Promise.resolve(runToWire(r).outcome);
  const id = ++requests;
  return new Promise((resolve) => {
    inFlight = { resolve };
    w.onmessage = (e: MessageEvent<{ id: number; outcome: WireOutcome }>) => {
      if (e.data.id !== id) return;
      inFlight = undefined;
      resolve(e.data.outcome);
    };
    w.onerror = (e) => {
      // A worker that cannot start (no module workers): this and later requests run here.
      e.preventDefault();
      workerFailed = true;
      worker = undefined;
      inFlight = undefined;
      resolve(runToWire(r).outcome);
    };
    w.postMessage({ id, request: r });
  });
}

let boxShown: { input?: Tensor; output?: Tensor; back?: Tensor; key: string } = { key: "" };
let inputPage = 0;
let outputPage = 0;
let backPage = 0;

/** Greys the quantize saturate switch where the QuantizeLinear version has no saturate (before 19), as Cast's is. */
function quantSaturate(): void {
  let has = true;
  try {
    const o = value("t-q-opset").trim();
    has = quantizeOperatorVersion("QuantizeLinear", o === "" ? LATEST_OPSET : Number(o)).attributes.has("saturate");
  } catch {
    // Not an opset: the box shows the library's error.
  }
  byId("t-q-saturate", HTMLInputElement).disabled = !has;
}

async function renderTensorBox(job: Job): Promise<void> {
  const op = value("t-op") as TensorOp;
  for (const params of document.querySelectorAll<HTMLElement>(".op-params")) params.hidden = !params.dataset.op!.split(" ").includes(op);
  for (const only of document.querySelectorAll<HTMLElement>("[data-op-only]")) only.hidden = only.dataset.opOnly !== op;
  quantSaturate();
  const r = tensorRequest();
  const status = byId("t-status", HTMLParagraphElement);
  const key = JSON.stringify(r);
  if (key !== boxShown.key) {
    let outcome: WireOutcome | undefined;
    if (r.values.length > MAX_TENSOR_TEXT) {
      const message = `${r.values.length.toLocaleString("en")} characters of values: the box reads up to ${MAX_TENSOR_TEXT.toLocaleString("en")}; the library itself has no such limit`;
      outcome = { inputError: { text: message, message } };
    } else {
      status.textContent = "Working…";
      outcome = await track(runBox(r));
    }
    if (!outcome || job.cancelled) return;
    inputPage = 0;
    outputPage = 0;
    backPage = 0;
    const input = outcome.input ? fromWire(outcome.input) : undefined;
    const output = outcome.output ? fromWire(outcome.output) : undefined;
    const back = outcome.back ? fromWire(outcome.back) : undefined;
    boxShown = { key, ...(input ? { input } : {}), ...(output ? { output } : {}), ...(back ? { back } : {}) };
    byId("t-q-note", HTMLParagraphElement).textContent = outcome.scaleNote ?? "";
    byId("t-back-box", HTMLDivElement).hidden = !back && !outcome.backError;
    byId("t-back", HTMLDivElement).replaceChildren(back ? el("div") : outcome.backError ? errorBox(outcome.backError) : "");
    byId("t-input", HTMLDivElement).replaceChildren(input ? el("div") : errorBox(outcome.inputError!));
    byId("t-note", HTMLDivElement).textContent = outcome.note ?? "";
    byId("t-output", HTMLDivElement).replaceChildren(output ? el("div") : outcome.error ? errorBox(outcome.error) : "");
    const failure = outcome.inputError ?? outcome.error;
    status.textContent = failure ? `Error: ${failure.text}` :
      `${input!.dtype.name} [${input!.shape.join(", ")}] to ${output!.dtype.name} [${output!.shape.join(", ")}].`;
  }
  const { input, output, back } = boxShown;
  if (back) byId("t-back", HTMLDivElement).replaceChildren(tensorTable(back, "t-back-table", backPage, (p) => { backPage = p; tensorView.now(); }));
  if (input) byId("t-input", HTMLDivElement).replaceChildren(tensorTable(input, "t-input-table", inputPage, (p) => { inputPage = p; tensorView.now(); }));
  if (output) byId("t-output", HTMLDivElement).replaceChildren(tensorTable(output, "t-output-table", outputPage, (p) => { outputPage = p; tensorView.now(); }));
}

// ---- Wiring -----------------------------------------------------------------------------------

const explorerView = view(async (job) => { await renderExplorer(job); ok("explorer-error"); }, failed("explorer-error"));
const formatView = view(() => { renderFormat(); ok("format-error"); }, failed("format-error"));
const inspectorView = view(() => renderInspector(), failed("explorer-error"));
const tensorView = view(async (job) => { await renderTensorBox(job); ok("tensor-error"); }, failed("tensor-error"));

/** Typing waits for a pause; a click or a choice redraws at once. */
function on(e: HTMLElement, redraw: () => void): void {
  e.addEventListener("input", () => {
    redraw();
    stateSaver.later();
  });
}

/** What the link leaves out, said next to the copy-link button (a long paste does not fit in a URL). */
function linkNote(left: readonly string[]): void {
  const names: Record<string, string> = { values: "the values typed in \u201ca value in every data type\u201d", "t-values": "the tensor's values" };
  const note = byId("link-note", HTMLSpanElement);
  note.textContent = left.length === 0 ? "" :
    `The link leaves out ${left.map((id) => names[id] ?? `#${id}`).join(" and ")}: too long for a link (it keeps text up to ${MAX_LINK_TEXT.toLocaleString("en")} characters).`;
  note.dataset.left = left.join(" ");
}

const stateSaver = view(() => { linkNote(saveState(document)); }, () => undefined);

/** Copies the page's link (its state saved first); where the clipboard refuses, shows it to copy by hand. */
async function copyLink(): Promise<void> {
  linkNote(saveState(document));
  const status = byId("link-status", HTMLSpanElement);
  const shown = byId("link-text", HTMLInputElement);
  try {
    await navigator.clipboard.writeText(location.href);
    shown.hidden = true;
    status.textContent = "Link copied.";
  } catch {
    shown.value = location.href;
    shown.hidden = false;
    shown.select();
    status.textContent = "The browser refused the clipboard: the link is selected below, to copy.";
  }
}
byId("copy-link", HTMLButtonElement).addEventListener("click", () => void copyLink());
for (const id of ["values", "opset"]) on(byId(id, HTMLElement), () => explorerView.later());
for (const id of ["from", "saturate", "round-mode"]) {
  on(byId(id, HTMLElement), () => {
    explorerView.now();
    if (id !== "from") {
      formatView.now();
      // A value the inspector's type cannot hold is cast with these switches.
      inspectorView.now();
    }
  });
}
on(formatSelect, () => formatView.now());
let inspectedType = dtype(inspectType.value);
on(inspectType, () => {
  typeChangedFrom = inspectedType;
  inspectedType = dtype(inspectType.value);
  inspectorView.now();
});
on(inspectInput, () => {
  typeChangedFrom = undefined;
  inspectorView.later();
});
for (const e of document.querySelectorAll<HTMLElement>("#tensor-box input, #tensor-box select, #tensor-box textarea")) {
  on(e, () => (e instanceof HTMLSelectElement || (e instanceof HTMLInputElement && e.type === "checkbox") ? tensorView.now() : tensorView.later()));
}
// Plots are drawn at the width they are shown at; a new width redraws them.
let resizeTimer: ReturnType<typeof setTimeout> | undefined;
addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    if (byId("formats", HTMLElement).clientWidth !== plotWidth) formatView.now();
  }, 150);
});

byId("format-table-box", HTMLDivElement).replaceChildren(formatTable());
explorerView.now();
formatView.now();
inspectorView.now();
tensorView.now();
wireFilePanel();
wireGgufPanel();
wireHfPanel();

/** For the browser tests: resolves once every view has finished redrawing; how the redraws were sliced. */
(globalThis as unknown as { playground: object }).playground = { settled, sliceStats, shownStats };
void settled().then(() => { document.body.dataset.ready = "true"; });
