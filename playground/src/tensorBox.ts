/**
 * The tensor box: values, a data type and a shape make a tensor; `cast`, `reshape`, `bitcast` or
 * `promote` (ConvertPromoteTypes) is applied to it as you type, and the result is shown as a table.
 * Every failure is the library's own TensorcastError, shown with its code and message.
 */
import {
  bitcast, cast, convertPromoteTypes, dtype, elementCode, formatHex, operatorVersion, parseValue, promoteTypes, reshape, Tensor,
  type BitcastSemantics, type CastOptions, type DType, type ReshapeOptions, type RoundMode,
} from "tensorcast";
import { el } from "./dom.js";
import { errorText, formatElement } from "./format.js";
import { splitValues } from "./explain.js";

export type TensorOp = "cast" | "reshape" | "bitcast" | "promote";
export const TENSOR_OPS: readonly TensorOp[] = ["cast", "reshape", "bitcast", "promote"];

export interface TensorRequest {
  readonly values: string;
  readonly dtype: string;
  /** Empty: a 1-D tensor of all the values. */
  readonly shape: string;
  readonly op: TensorOp;
  readonly castTo: string;
  readonly saturate: boolean;
  readonly roundMode: RoundMode;
  readonly castOpset: string;
  readonly reshapeShape: string;
  readonly allowzero: boolean;
  readonly reshapeOpset: string;
  readonly bitcastTo: string;
  readonly semantics: BitcastSemantics;
  readonly promoteWith: string;
  readonly promoteWithShape: string;
  readonly promoteUnsafe: boolean;
  readonly pytorchScalar: boolean;
}

export interface TensorOutcome {
  readonly input?: Tensor;
  /** Why the input tensor could not be built. */
  readonly inputError?: Failure;
  readonly output?: Tensor;
  readonly error?: Failure;
  /** What the operation did, e.g. "float16 [2] + bfloat16 [] -> f32". */
  readonly note?: string;
}

export interface Failure {
  readonly text: string;
  readonly code?: string;
  readonly message: string;
}

function failure(e: unknown): Failure {
  const code = typeof e === "object" && e !== null && "code" in e ? String((e as { code: unknown }).code) : undefined;
  return { text: errorText(e), message: e instanceof Error ? e.message : String(e), ...(code ? { code } : {}) };
}

/**
 * The values for `fromValues`: a JSON array (nested arrays are flattened, except complex pairs),
 * or tokens separated by spaces or commas (commas only for strings). A token that is not a value of
 * the type's kind is passed on as a string, so the library's own message says what is wrong.
 */
export function parseTensorValues(text: string, t: DType): unknown[] {
  const trimmed = text.trim();
  if (trimmed.startsWith("[") && t.kind !== "complex") {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (Array.isArray(parsed)) return (parsed as unknown[]).flat(Infinity).map((v) => (t.kind === "int" || t.kind === "uint") && t.bits === 64 && typeof v === "number" ? BigInt(v) : v);
    } catch {
      // Not JSON: read it as a list of tokens below.
    }
  }
  if (t.kind === "string") return trimmed === "" ? [] : trimmed.split(",").map((s) => s.trim());
  return splitValues(trimmed).map((token) => parseToken(token, t));
}

const COMPLEX = /^([+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)([+-](?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)j$/i;

function parseToken(token: string, t: DType): unknown {
  switch (t.kind) {
    case "bool":
      if (/^true$/i.test(token)) return true;
      if (/^false$/i.test(token)) return false;
      break;
    case "complex": {
      const m = COMPLEX.exec(token);
      if (m) return [Number(m[1]), Number(m[2])];
      const v = parseValue(token);
      return v ? [v.number, 0] : token;
    }
    case "int":
    case "uint":
      if (t.bits === 64 && /^[+-]?\d+$/.test(token)) return BigInt(token);
      break;
    default:
      break;
  }
  const v = parseValue(token);
  return v ? v.number : token;
}

/** "2 3", "[2, 3]", "2x3" or "[]"; empty text is undefined (the default shape). */
export function parseShape(text: string): number[] | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  return trimmed.replace(/[[\]()]/g, " ").split(/[\s,x×]+/).filter((s) => s !== "").map(Number);
}

function opset(text: string): number | undefined {
  return text.trim() === "" ? undefined : Number(text);
}

/** Builds the input tensor and applies the operation. */
export function runTensorBox(r: TensorRequest): TensorOutcome {
  let input: Tensor;
  try {
    // `fromValues` checks every value and names the one it refuses.
    const t = dtype(r.dtype);
    const values = parseTensorValues(r.values, t);
    input = Tensor.fromValues(values as never[], t, parseShape(r.shape));
  } catch (e) {
    return { inputError: failure(e) };
  }
  try {
    switch (r.op) {
      case "cast": {
        const o = opset(r.castOpset);
        const options: CastOptions = o === undefined ? {} : { opset: o };
        const attributes = operatorVersion("Cast", o ?? 28).attributes;
        if (attributes.has("saturate")) options.saturate = r.saturate;
        if (attributes.has("round_mode")) options.roundMode = r.roundMode;
        return { input, output: cast(input, r.castTo, options) };
      }
      case "reshape": {
        const o = opset(r.reshapeOpset);
        const options: ReshapeOptions = o === undefined ? {} : { opset: o };
        if (r.allowzero) options.allowzero = true;
        const output = reshape(input, parseShape(r.reshapeShape) ?? [], options);
        return { input, output, note: sharedNote(input, output) };
      }
      case "bitcast": {
        const output = bitcast(input, r.bitcastTo, { semantics: r.semantics });
        return { input, output, note: sharedNote(input, output) };
      }
      case "promote": {
        const other = Tensor.zeros(r.promoteWith, parseShape(r.promoteWithShape) ?? []);
        const options = { promoteUnsafe: r.promoteUnsafe, pytorchScalarPromotion: r.pytorchScalar };
        const common = promoteTypes(input.dtype, other.dtype, { ...options, aRank: input.shape.length, bRank: other.shape.length });
        const note = `${input.dtype.name} [${input.shape.join(", ")}] + ${other.dtype.name} [${other.shape.join(", ")}] -> ${common.name}` +
          (common.dtype ? ` (${common.dtype.name})` : "");
        const [output] = convertPromoteTypes(input, other, options);
        return { input, output, note };
      }
    }
  } catch (e) {
    return { input, error: failure(e) };
  }
}

function sharedNote(input: Tensor, output: Tensor): string {
  const a = input.data as { buffer?: ArrayBufferLike };
  const b = output.data as { buffer?: ArrayBufferLike };
  const shared = input.data === output.data || (a.buffer !== undefined && a.buffer === b.buffer);
  return shared ? "zero copy: the result is a view of the input's storage" : "the bytes were copied";
}

const MAX_CELLS = 512;

/** A tensor as a table: the last dimension across, every index of the others down. */
export function tensorTable(x: Tensor, id: string): HTMLElement {
  const values = x.toValues() as unknown[];
  const rank = x.shape.length;
  const cols = rank === 0 ? 1 : x.shape[rank - 1];
  const rows = cols === 0 ? 0 : x.size / cols;
  const showCodes = x.dtype.kind !== "string" && x.dtype.kind !== "complex";
  const wrap = el("div", { class: "tensor", id, "data-dtype": x.dtype.name, "data-shape": JSON.stringify(x.shape) });
  wrap.append(el("div", { class: "tensor-caption" }, `${x.dtype.name} [${x.shape.join(", ")}] · ${x.size} element${x.size === 1 ? "" : "s"}`));
  if (x.size === 0) {
    wrap.append(el("div", { class: "empty" }, "(no elements)"));
    return wrap;
  }
  const table = el("table", { class: "elements" });
  const head = el("tr", {}, el("th", {}, rank <= 1 ? "" : `[${x.shape.slice(0, -1).map(() => "i").join(", ")}, ·]`));
  for (let j = 0; j < cols; j++) head.append(el("th", {}, rank === 0 ? "scalar" : String(j)));
  table.append(head);
  let shown = 0;
  for (let r = 0; r < rows && shown < MAX_CELLS; r++) {
    const tr = el("tr", {}, el("th", {}, rank <= 1 ? "" : `[${indexOf(r, x.shape.slice(0, -1)).join(", ")}]`));
    for (let j = 0; j < cols && shown < MAX_CELLS; j++, shown++) {
      const i = r * cols + j;
      const text = formatElement(values[i]);
      const code = showCodes ? formatHex(elementCode(x, i), x.dtype) : "";
      tr.append(el("td", { "data-index": i, "data-value": text, "data-code": code || undefined },
        el("span", { class: "v" }, text), ...(code ? [el("span", { class: "c" }, code)] : [])));
    }
    table.append(tr);
  }
  wrap.append(table);
  if (shown < x.size) wrap.append(el("div", { class: "empty" }, `… first ${shown} of ${x.size} elements shown`));
  return wrap;
}

/** The multi-index of flat row `r` over `dims`. */
function indexOf(r: number, dims: readonly number[]): number[] {
  const out = new Array<number>(dims.length);
  for (let k = dims.length - 1; k >= 0; k--) {
    out[k] = r % dims[k];
    r = Math.floor(r / dims[k]);
  }
  return out;
}
