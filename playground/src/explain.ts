/**
 * What the explorer shows for one typed-in value and every data type: the code the cast writes,
 * its bits, the value it decodes to, the rounding error, and what happened (saturated, overflow,
 * NaN, ...). The parsing and judging are the library's own (src/explain/), the code `tensorcast
 * cast` runs too; the browser test compares the two for every type.
 */
import {
  cast, changedByStoring, classifyCast, DTYPES, elementCode, formatHex, operatorVersion, parseValue, readElement,
  roundingError, splitBits, storeValue, TensorcastError, VALUE_SYNTAX,
  type BitField, type CastFlag, type CastOptions, type DType, type Element, type RoundMode, type Tensor,
} from "tensorcast";
import { errorText } from "./format.js";

/** The tokens of a typed or pasted list: separated by spaces, commas, semicolons or new lines; brackets ignored. */
export function splitValues(text: string): string[] {
  return text.replace(/[[\](){}]/g, " ").split(/[\s,;]+/).filter((s) => s !== "");
}

export interface ExplainOptions {
  readonly from: DType;
  readonly saturate: boolean;
  readonly roundMode: RoundMode;
  readonly opset: number;
}

export interface TypeRow {
  readonly type: DType;
  /** The library's error for this target (complex, or a type the opset's Cast lacks). */
  readonly error?: string;
  readonly errorCode?: string;
  readonly errorMessage?: string;
  /** Hex code, e.g. `0x7e`; empty for string targets, which have no raw layout. */
  readonly code: string;
  readonly fields: readonly BitField[];
  /** The decoded value, spelled as the CLI spells it. */
  readonly result: string;
  readonly absError: number | null;
  readonly relError: number | null;
  readonly flag: CastFlag | "";
}

export interface Explained {
  readonly input: string;
  /** Why the token is not a value, or why the source type cannot hold it (the library's message). */
  readonly error?: string;
  /** The value once stored in the source type, and whether storing changed it. */
  readonly source: string;
  readonly sourceChanged: boolean;
  readonly rows: readonly TypeRow[];
}

/** The cast options the opset's Cast version has: saturate from Cast-19, round_mode from Cast-24. */
export function castOptions(o: ExplainOptions): CastOptions {
  const version = operatorVersion("Cast", o.opset);
  const options: CastOptions = { opset: o.opset };
  if (version.attributes.has("saturate")) options.saturate = o.saturate;
  if (version.attributes.has("round_mode")) options.roundMode = o.roundMode;
  return options;
}

/** One value through every data type. */
export function explain(text: string, o: ExplainOptions): Explained {
  const input = parseValue(text);
  if (!input) {
    return { input: text, error: `${JSON.stringify(text)} is not a value; expected ${VALUE_SYNTAX}`, source: "", sourceChanged: false, rows: [] };
  }
  let stored: Tensor;
  try {
    stored = storeValue(input, o.from);
  } catch (e) {
    return { input: text, error: `cannot store ${text} as ${o.from.name}: ${errorText(e)}`, source: "", sourceChanged: false, rows: [] };
  }
  const s = readElement(stored, 0);
  const options = castOptions(o);
  const rows = DTYPES.map((to) => castRow(stored, s, to, options));
  return { input: text, source: s.display, sourceChanged: changedByStoring(input, s), rows };
}

function castRow(stored: Tensor, s: Element, to: DType, options: CastOptions): TypeRow {
  let result: Tensor;
  try {
    result = cast(stored, to, options);
  } catch (e) {
    const row: TypeRow = {
      type: to, error: errorText(e), code: "", fields: [], result: "", absError: null, relError: null, flag: "",
    };
    return e instanceof TensorcastError ? { ...row, errorCode: e.code, errorMessage: e.message } : row;
  }
  const r = readElement(result, 0);
  if (to.kind === "string") {
    return { type: to, code: "", fields: [], result: r.display, absError: null, relError: null, flag: "" };
  }
  const code = elementCode(result, 0);
  const [absError, relError] = roundingError(s, r);
  return {
    type: to, code: formatHex(code, to), fields: splitBits(code, to), result: r.display, absError, relError,
    flag: classifyCast(s, r, to),
  };
}
