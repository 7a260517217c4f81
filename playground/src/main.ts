/**
 * The playground page: wires the controls in index.html to the three views (a value in every
 * type, a format's values and rounding error, the tensor box). Everything is recomputed on every
 * input event; the page keeps no state of its own beyond the controls.
 */
import {
  DTYPES, LATEST_OPSET, dtype, formatError, operatorVersion, type DType, type RoundMode, type BitcastSemantics,
} from "tensorcast";
import { byId, el, fillSelect } from "./dom.js";
import { castOptions, explain, splitValues, type ExplainOptions, type Explained, type TypeRow } from "./explain.js";
import { errorText } from "./format.js";
import { codeTable, comparePlot, errorPlot, FORMATS, formatLimit, formatStats, valuesPlot } from "./plot.js";
import { runTensorBox, tensorTable, TENSOR_OPS, type TensorOp, type Failure } from "./tensorBox.js";

/** The order rows are shown in: floats widest first, then signed and unsigned integers, bool, string, complex. */
const ORDER = [
  "float64", "float32", "float16", "bfloat16", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
  "float8e8m0", "float6e2m3", "float6e3m2", "float4e2m1", "int64", "int32", "int16", "int8", "int4", "int2",
  "uint64", "uint32", "uint16", "uint8", "uint4", "uint2", "bool", "string", "complex64", "complex128",
];
const rank = (t: DType) => (ORDER.includes(t.name) ? ORDER.indexOf(t.name) : ORDER.length + t.onnx);
const SHOWN: readonly DType[] = [...DTYPES].sort((a, b) => rank(a) - rank(b));
/** Values beyond this many are not expanded (the page stays responsive on a large paste). */
const MAX_VALUES = 64;

// ---- A value in every data type --------------------------------------------------------------

const valuesInput = byId("values", HTMLTextAreaElement);
const fromSelect = byId("from", HTMLSelectElement);
const saturateInput = byId("saturate", HTMLInputElement);
const roundModeSelect = byId("round-mode", HTMLSelectElement);
const opsetInput = byId("opset", HTMLInputElement);
const results = byId("results", HTMLDivElement);

fillSelect(fromSelect, SHOWN.filter((t) => t.kind !== "string" && t.kind !== "complex").map((t) => t.name), "float64");

function explainOptions(): ExplainOptions {
  const opset = Number(opsetInput.value || LATEST_OPSET);
  return {
    from: dtype(fromSelect.value),
    saturate: saturateInput.checked,
    roundMode: roundModeSelect.value as RoundMode,
    opset: Number.isInteger(opset) && opset >= 1 && opset <= LATEST_OPSET ? opset : LATEST_OPSET,
  };
}

function renderExplorer(): void {
  const o = explainOptions();
  const version = operatorVersion("Cast", o.opset);
  saturateInput.disabled = !version.attributes.has("saturate");
  roundModeSelect.disabled = !version.attributes.has("round_mode");
  byId("cast-version", HTMLSpanElement).textContent =
    `Cast-${version.version}: saturate ${saturateInput.disabled ? "n/a" : o.saturate}, round_mode ${roundModeSelect.disabled ? "n/a" : o.roundMode}`;
  const tokens = splitValues(valuesInput.value);
  const blocks = tokens.slice(0, MAX_VALUES).map((token) => valueBlock(explain(token, o)));
  if (tokens.length > MAX_VALUES) blocks.push(el("p", { class: "note" }, `… and ${tokens.length - MAX_VALUES} more values (only the first ${MAX_VALUES} are shown)`));
  if (tokens.length === 0) blocks.push(el("p", { class: "note" }, "Type a number, or paste a list."));
  results.replaceChildren(...blocks);
}

function valueBlock(x: Explained): HTMLElement {
  const block = el("section", { class: "value-block", "data-input": x.input, "data-source": x.source, "data-source-changed": String(x.sourceChanged) });
  if (x.error) {
    block.append(el("h3", {}, el("code", {}, x.input)), el("p", { class: "error", "data-error": x.error }, x.error));
    return block;
  }
  const from = fromSelect.value;
  block.append(el("h3", {},
    el("code", {}, x.input), " stored as ", from, " is ", el("code", { class: "source" }, x.source),
    ...(x.sourceChanged ? [el("span", { class: "changed" }, " (changed by storing it)")] : [])));
  const table = el("table", { class: "explain" });
  table.append(el("tr", {}, ...["type", "code", "bits", "value", "abs error", "rel error", "what happened"].map((h) => el("th", {}, h))));
  const byName = new Map(x.rows.map((r) => [r.type.name, r]));
  for (const t of SHOWN) table.append(typeRow(byName.get(t.name)!));
  block.append(table);
  return block;
}

function typeRow(r: TypeRow): HTMLTableRowElement {
  const name = el("td", { class: "type" }, r.type.name);
  if (r.error) {
    return el("tr", { "data-type": r.type.name, "data-error": r.errorMessage ?? r.error, "data-error-code": r.errorCode },
      name, el("td", { colspan: 6, class: "error" }, r.error));
  }
  const bits = el("td", { class: "bits" });
  r.fields.forEach((f, i) => {
    if (i > 0) bits.append(el("span", { class: "sep" }, "|"));
    bits.append(el("span", { class: `f-${f.kind}` }, f.bits));
  });
  return el("tr", {
    "data-type": r.type.name, "data-code": r.code, "data-value": r.result,
    "data-abs": r.absError === null ? "" : String(r.absError), "data-rel": r.relError === null ? "" : String(r.relError),
    "data-flag": r.flag,
  },
  name, el("td", { class: "code" }, r.code), bits, el("td", { class: "value" }, r.result),
  el("td", { class: "num" }, r.type.kind === "string" ? "" : formatError(r.absError)),
  el("td", { class: "num" }, r.type.kind === "string" ? "" : formatError(r.relError)),
  el("td", {}, r.flag ? el("span", { class: `flag flag-${r.flag.replace(/ /g, "-")}` }, r.flag) : ""));
}

// ---- A format, all its values -----------------------------------------------------------------

const formatSelect = byId("format", HTMLSelectElement);
fillSelect(formatSelect, FORMATS.map((t) => t.name), "float8e4m3fn");

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
  const options = castOptions({ ...explainOptions(), opset: LATEST_OPSET });
  byId("values-plot", HTMLDivElement).replaceChildren(valuesPlot(t));
  byId("error-plot", HTMLDivElement).replaceChildren(errorPlot(t, options));
  byId("code-table", HTMLDivElement).replaceChildren(
    t.bits <= 8 ? codeTable(t) : el("p", { class: "note" }, `${s.codes} codes: too many for a table; the plots show them all.`));
  byId("compare-plot", HTMLDivElement).replaceChildren(comparePlot(t, (picked) => {
    formatSelect.value = picked.name;
    renderFormat();
  }));
}

// ---- The tensor box ---------------------------------------------------------------------------

const tensorTypes = SHOWN.map((t) => t.name);
fillSelect(byId("t-dtype", HTMLSelectElement), tensorTypes, "float32");
fillSelect(byId("t-op", HTMLSelectElement), TENSOR_OPS, "cast");
fillSelect(byId("t-cast-to", HTMLSelectElement), tensorTypes, "float8e4m3fn");
fillSelect(byId("t-bitcast-to", HTMLSelectElement), tensorTypes, "uint8");
fillSelect(byId("t-promote-with", HTMLSelectElement), tensorTypes, "float16");

const value = (id: string) => (document.getElementById(id) as HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement).value;
const checked = (id: string) => byId(id, HTMLInputElement).checked;

function errorBox(f: Failure): HTMLElement {
  return el("div", { class: "error", "data-code": f.code, "data-message": f.message }, f.text);
}

function renderTensorBox(): void {
  const op = value("t-op") as TensorOp;
  for (const params of document.querySelectorAll<HTMLElement>(".op-params")) params.hidden = params.dataset.op !== op;
  const outcome = runTensorBox({
    values: value("t-values"), dtype: value("t-dtype"), shape: value("t-shape"), op,
    castTo: value("t-cast-to"), saturate: checked("t-saturate"), roundMode: value("t-round-mode") as RoundMode,
    castOpset: value("t-cast-opset"),
    reshapeShape: value("t-reshape-shape"), allowzero: checked("t-allowzero"), reshapeOpset: value("t-reshape-opset"),
    bitcastTo: value("t-bitcast-to"), semantics: value("t-semantics") as BitcastSemantics,
    promoteWith: value("t-promote-with"), promoteWithShape: value("t-promote-shape"),
    promoteUnsafe: checked("t-promote-unsafe"), pytorchScalar: checked("t-pytorch"),
  });
  byId("t-input", HTMLDivElement).replaceChildren(
    outcome.input ? tensorTable(outcome.input, "t-input-table") : errorBox(outcome.inputError!));
  byId("t-note", HTMLDivElement).textContent = outcome.note ?? "";
  byId("t-output", HTMLDivElement).replaceChildren(
    outcome.output ? tensorTable(outcome.output, "t-output-table") : outcome.error ? errorBox(outcome.error) : "");
}

// ---- Wiring -----------------------------------------------------------------------------------

/** Runs a view's render; a bug shows in the view's error line instead of leaving the page stale. */
function guarded(render: () => void, errorId: string): () => void {
  const line = byId(errorId, HTMLParagraphElement);
  return () => {
    try {
      render();
      line.hidden = true;
    } catch (e) {
      line.textContent = `the page failed: ${errorText(e)}`;
      line.hidden = false;
      throw e;
    }
  };
}

const explorer = guarded(renderExplorer, "explorer-error");
const formatView = guarded(renderFormat, "format-error");
const tensorBox = guarded(renderTensorBox, "tensor-error");

for (const id of ["values", "from", "saturate", "round-mode", "opset"]) {
  byId(id, HTMLElement).addEventListener("input", () => {
    explorer();
    if (id === "saturate" || id === "round-mode") formatView();
  });
}
formatSelect.addEventListener("input", formatView);
for (const e of document.querySelectorAll<HTMLElement>("#tensor-box input, #tensor-box select, #tensor-box textarea")) {
  e.addEventListener("input", tensorBox);
}

explorer();
formatView();
tensorBox();
document.body.dataset.ready = "true";
