/**
 * What `tensorcast cast` computes, apart from how it is printed: for each value, the value stored in
 * the source type, the target code, the value it decodes to, the rounding error and what happened.
 * The judging itself lives in src/explain/, which the playground runs too.
 */
import {
  cast, dtype, LATEST_OPSET, operatorVersion, TensorcastError,
  type CastOptions, type DType, type RoundMode,
} from "../../index.js";
import { elementCode, formatBinary, formatHex, readElement } from "../../explain/element.js";
import { changedByStoring, classifyCast, roundingError, storeValue, type CastFlag } from "../../explain/outcome.js";
import { parseValue, VALUE_SYNTAX, type InputValue } from "../../explain/value.js";
import { describe, expectObject } from "../../args.js";
import { expectStrings } from "../args.js";
import { quoteBounded } from "../io/safetensorsJson.js";

export type { CastFlag };

export interface CastRequest {
  /** Source type; default float64, so the value is what JS reads from the literal. */
  readonly from?: string;
  readonly to: string;
  readonly saturate?: boolean;
  readonly roundMode?: RoundMode;
  readonly opset?: number;
}

export interface CastRow {
  /** The argument as given. */
  readonly input: string;
  /** The value once stored in the source type. */
  readonly source: string;
  /** Whether storing in the source type changed it (0.1 as float32 does). */
  readonly sourceChanged: boolean;
  /** The target code in hex (`0x7e`) and in binary, split into sign|exponent|mantissa for floats. */
  readonly code: string;
  readonly binary: string;
  /** The target code's value. */
  readonly result: string;
  /** |result - source| and that over |source|; null where undefined (NaN, inf, or source 0). */
  readonly absError: number | null;
  readonly relError: number | null;
  readonly flag: CastFlag;
}

export interface CastReport {
  readonly from: string;
  readonly to: string;
  /** The operator version the opset selects, e.g. "Cast-24". */
  readonly operator: string;
  readonly opset: number;
  /** The options in effect (defaults filled in), whether or not the target uses them. */
  readonly saturate: boolean;
  readonly roundMode: RoundMode;
  readonly rows: readonly CastRow[];
}

/**
 * Stores each value in `from` with `Tensor.fromValues` (round to nearest even), then casts it to
 * `to` with the request's options, one value at a time so each row stands alone.
 * @throws TensorcastError PARSE_ERROR for a value that is not a number; others for anything the library
 *         rejects (unknown type, type not in the opset's Cast, a value `from` cannot hold such as
 *         1.5 for int8 or inf for float8e4m3fn).
 */
export function castValues(values: readonly string[], request: CastRequest): CastReport {
  expectStrings(values, "castValues' values");
  expectObject(request, "castValues' request", "INVALID_ATTRIBUTE");
  const inputs = values.map(parseCliValue);
  const from = resolve(request.from ?? "float64", "from");
  const to = resolve(request.to, "to");
  const options: CastOptions = {};
  if (request.saturate !== undefined) options.saturate = request.saturate;
  if (request.roundMode !== undefined) options.roundMode = request.roundMode;
  if (request.opset !== undefined) options.opset = request.opset;
  const opset = request.opset ?? LATEST_OPSET;
  const version = operatorVersion("Cast", opset);
  const roundMode = request.roundMode ?? "up";

  const rows = inputs.map((input): CastRow => {
    const stored = withContext(`cannot store ${input.text} in the --from type ${from.name}`, () => storeValue(input, from));
    const result = cast(stored, to, options);
    const s = readElement(stored, 0);
    const r = readElement(result, 0);
    const code = elementCode(result, 0);
    const [absError, relError] = roundingError(s, r);
    return {
      input: input.text,
      source: s.display,
      sourceChanged: changedByStoring(input, s),
      code: formatHex(code, to),
      binary: formatBinary(code, to),
      result: r.display,
      absError,
      relError,
      flag: classifyCast(s, r, to),
    };
  });
  return {
    from: from.name, to: to.name, operator: `Cast-${version.version}`, opset,
    saturate: request.saturate ?? true, roundMode, rows,
  };
}

/**
 * The data type named by --from or --to: a name, alias or ONNX number (17). The error says which
 * option named it.
 */
function resolve(name: string, option: "from" | "to"): DType {
  if (typeof name !== "string") throw new TensorcastError("INVALID_ATTRIBUTE", `castValues' request.${option} must be a type name, got ${describe(name)}`);
  return withContext(`--${option}`, () => dtype(/^\d+$/.test(name) ? Number(name) : name));
}

/** Runs `f`, prefixing the message of a TensorcastError it throws (the code stays). */
function withContext<T>(context: string, f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof TensorcastError) throw new TensorcastError(e.code, `${context}: ${e.message}`);
    throw e;
  }
}

/** @throws UsageError for anything that is not a decimal literal or a special name. */
function parseCliValue(text: string): InputValue {
  const value = parseValue(text);
  if (!value) throw new TensorcastError("PARSE_ERROR", notAValue(text));
  return value;
}

/** The message for a command-line value that is not one `cast` accepts. */
export function notAValue(text: string): string {
  return `${quoteBounded(text)} is not a value cast accepts; expected ${VALUE_SYNTAX}`;
}
