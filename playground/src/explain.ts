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
import { checkWidth, codeTensor, typedCode } from "./inspector.js";

/** The tokens of a typed or pasted list: separated by spaces, commas, semicolons or new lines; brackets ignored. */
export function splitValues(text: string): string[] {
  return text.replace(/[[\](){}]/g, " ").split(/[\s,;]+/).filter((s) => s !== "");
}

const OPENERS: Readonly<Record<string, string>> = { "[": "]", "(": ")", "{": "}" };

/**
 * Why the brackets of a list do not pair up ("[1,2,3" is missing its "]"), or undefined when they
 * do. A list that is cut off is more likely a paste gone wrong than the values wanted.
 * @example bracketError("[1,2,3") // 'unbalanced brackets: the "[" at character 1 is never closed with "]"'
 * @example bracketError("[[1, 2], [3, 4]]") // undefined
 */
export function bracketError(text: string): string | undefined {
  const open: { c: string; at: number }[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c in OPENERS) open.push({ c, at: i });
    else if (c === "]" || c === ")" || c === "}") {
      const top = open.pop();
      if (!top) return `unbalanced brackets: the "${c}" at character ${i + 1} closes nothing`;
      if (OPENERS[top.c] !== c) return `unbalanced brackets: the "${top.c}" at character ${top.at + 1} is closed by "${c}" at character ${i + 1}`;
    }
  }
  const top = open.pop();
  return top ? `unbalanced brackets: the "${top.c}" at character ${top.at + 1} is never closed with "${OPENERS[top.c]}"` : undefined;
}

/** A value list as read: its tokens, or why it cannot be read, and notes on how it was read. */
export interface ValueList {
  readonly tokens: readonly string[];
  readonly error?: string;
  readonly notes: readonly string[];
}

/**
 * Reads the explorer's list. A comma between two digits with no space ("1,5") is read as a
 * separator, as in "[1,2,3]", but outside brackets it may be a decimal comma, so a note says how
 * it was read.
 * @example readValueList("1,5") // { tokens: ["1", "5"], notes: ['"1,5" was read as two values, 1 and 5: ...'] }
 * @example readValueList("[1,2,3]") // { tokens: ["1", "2", "3"], notes: [] }
 */
export function readValueList(text: string): ValueList {
  const error = bracketError(text);
  if (error) return { tokens: [], error, notes: [] };
  return { tokens: splitValues(text), notes: listNotes(text) };
}

function listNotes(text: string): string[] {
  if (/^\s*[[({]/.test(text)) return [];
  const m = /(\d+),(\d+)/.exec(text);
  return m ? [`"${m[0]}" was read as two values, ${m[1]} and ${m[2]}: the decimal separator is "." (write ${m[1]}.${m[2]}); commas separate values`] : [];
}

/** Characters split per piece by readLongValueList: a few ms of work in any engine. */
const PIECE = 64 * 1024;

/**
 * readValueList for a long paste, split into pieces with `pause()` awaited before each, so a
 * million values never hold the main thread for one long task. Pieces end on a separator.
 * @example await readLongValueList(pasted, () => job.yield()) // the same as readValueList(pasted)
 */
export async function readLongValueList(text: string, pause: () => Promise<void>): Promise<ValueList> {
  // The bracket scan walks every character; a list without brackets (most pastes) skips it.
  const error = /[[\](){}]/.test(text) ? bracketError(text) : undefined;
  if (error) return { tokens: [], error, notes: [] };
  const tokens: string[] = [];
  for (let at = 0; at < text.length;) {
    await pause();
    let end = Math.min(text.length, at + PIECE);
    while (end < text.length && !/[\s,;[\](){}]/.test(text[end])) end++;
    for (const token of splitValues(text.slice(at, end))) tokens.push(token);
    at = end;
  }
  return { tokens, notes: listNotes(text) };
}

/**
 * What reading a decimal literal as a float64 did to it, when that is more than rounding: a
 * literal beyond float64's range reads as inf (1e400), a non-zero one below its smallest
 * subnormal as 0 (1e-400).
 * @example readingNote("1e400", Infinity) // "1e400 is beyond float64's range (max 1.7976931348623157e+308), so it reads as inf"
 * @example readingNote("0.1", 0.1) // undefined
 */
export function readingNote(text: string, number: number): string | undefined {
  if (!/^[+-]?(?:\d|\.\d)/.test(text)) return undefined;
  if (!Number.isFinite(number)) return `${text} is beyond float64's range (max 1.7976931348623157e+308), so it reads as ${number > 0 ? "inf" : "-inf"}`;
  if (number === 0 && /[1-9]/.test(text.replace(/e.*$/i, ""))) return `${text} is below float64's smallest subnormal (5e-324), so it reads as ${Object.is(number, -0) ? "-0" : "0"}`;
  return undefined;
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
  /** Why the flag, where it surprises: a NaN that became a number. */
  readonly why?: string;
}

export interface Explained {
  readonly input: string;
  /** Why the token is not a value, or why the source type cannot hold it (the library's message). */
  readonly error?: string;
  /** The value once stored in the source type, and whether storing changed it. */
  readonly source: string;
  /** Reading the literal as a float64 already changed it (1e400 is inf): said even when storing "changed" nothing more. */
  readonly readingNote?: string;
  /** The library's error when storing failed (code and message), for the page's data attributes. */
  readonly errorCode?: string;
  readonly errorMessage?: string;
  readonly sourceChanged: boolean;
  /** The input was a code (`0x3c00`, `0b0111`), read in the source type rather than stored as a value. */
  readonly isCode?: boolean;
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

/**
 * A code typed in hex or binary, read in the source type (`0x3c00` as float16 is 1), through every
 * data type; a code wider than the source type, or a source type without codes to type, is refused.
 */
function explainCode(text: string, code: bigint, o: ExplainOptions): Explained {
  const refused = (why: string): Explained => ({ input: text, error: `cannot read ${text} as a ${o.from.name} code: ${why}`, source: "", sourceChanged: false, rows: [] });
  if (o.from.kind !== "float" && o.from.kind !== "int" && o.from.kind !== "uint") return refused(`codes are read in the float and integer types; type ${o.from.name} values as values`);
  let stored: Tensor;
  try {
    stored = codeTensor(o.from, checkWidth(text, code, o.from));
  } catch (e) {
    return refused(e instanceof Error ? e.message : String(e));
  }
  const s = readElement(stored, 0);
  const options = castOptions(o);
  return { input: text, source: s.display, sourceChanged: false, isCode: true, rows: DTYPES.map((to) => castRow(stored, s, to, options)) };
}

/** One value (or a code of the source type, `0x3c00`) through every data type. */
export function explain(text: string, o: ExplainOptions): Explained {
  const input = parseValue(text);
  if (!input) {
    const code = typedCode(text);
    if (code !== undefined) return explainCode(text, code, o);
    return { input: text, error: `${JSON.stringify(text)} is not a value; expected ${VALUE_SYNTAX}, or a code of the "stored first as" type such as 0x3c00`, source: "", sourceChanged: false, rows: [] };
  }
  let stored: Tensor;
  try {
    stored = storeValue(input, o.from);
  } catch (e) {
    // The library numbers the values it refuses ("value 0 (Infinity) cannot be stored"); with one
    // value the number reads as "the value zero", so the page names the value itself.
    const library = e instanceof TensorcastError ? { errorCode: e.code, errorMessage: e.message } : {};
    const message = e instanceof TensorcastError ? e.message.replace(/^value 0 \([^)]*\) /, "") : errorText(e);
    const shown = e instanceof TensorcastError && message !== e.message
      ? `${text} ${message} (TensorcastError ${e.code})`
      : `cannot store ${text} as ${o.from.name}: ${errorText(e)}`;
    return { input: text, error: shown, source: "", sourceChanged: false, rows: [], ...library };
  }
  const s = readElement(stored, 0);
  const options = castOptions(o);
  const rows = DTYPES.map((to) => castRow(stored, s, to, options));
  const note = readingNote(text, input.number);
  return { input: text, source: s.display, sourceChanged: changedByStoring(input, s), rows, ...(note ? { readingNote: note } : {}) };
}

function castRow(stored: Tensor, s: Element, to: DType, options: CastOptions): TypeRow {
  let result: Tensor;
  try {
    // By name: Cast-1 takes `to` as a type-name string and refuses a DType object.
    result = cast(stored, to.name, options);
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
  const flag = classifyCast(s, r, to);
  const hex = formatHex(code, to);
  return {
    type: to, code: hex, fields: splitBits(code, to), result: r.display, absError, relError, flag,
    ...(flag === "nan lost" ? { why: `${to.name} has no NaN, so the cast writes ${hex} (${r.display}) for ${s.display}` } : {}),
  };
}
