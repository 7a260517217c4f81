/**
 * `tensorcast cast`: what values become in a target type, code by code.
 */
import { binaryHeader } from "../../../explain/element.js";
import { formatError } from "../../../explain/format.js";
import { parseValue, VALUE_SYNTAX } from "../../../explain/value.js";
import { dtype, TensorcastError, type RoundMode } from "../../../index.js";
import { expectObject } from "../../../args.js";
import { parseCommandArgs, type OptionSpecs, type OptionValues } from "../args.js";
import { castValues, notAValue, type CastReport, type CastRequest } from "../castReport.js";
import type { Command } from "../command.js";
import { renderTable } from "../format.js";
import type { CliIO } from "../io.js";
import { EXIT_OK, UsageError } from "../usage.js";

const ROUND_MODES: readonly RoundMode[] = ["up", "down", "nearest"];

const OPTIONS = {
  from: { type: "string", expects: "a data type such as float32 (default float64)" },
  to: { type: "string", expects: "a data type such as float8e4m3fn" },
  saturate: { type: "boolean" },
  "no-saturate": { type: "boolean" },
  "round-mode": { type: "string", expects: ROUND_MODES.join(", ") },
  opset: { type: "string", expects: "an opset number such as 19 or 28" },
  scale: { type: "string", expects: "a number such as 0.05" },
  "zero-point": { type: "string", expects: "a value of the --to type such as 128" },
  "scale-type": { type: "string", expects: "float32, float16, bfloat16, int32 or float8e8m0" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const HELP = `Usage: tensorcast cast --to <type> [--from <type>] [options] <value>...

Stores each value in the --from type (rounding to nearest even), casts it to the --to type exactly
as ONNX Cast does, and shows the target code, the value it decodes to and the rounding error.

Values: ${VALUE_SYNTAX}.
Types:  any name from \`tensorcast types\`: canonical (float8e4m3fn), ONNX enum name
        (FLOAT8E4M3FN), ONNX number (17) or alias (f8e4m3).

Options:
  --to <type>           target type (required)
  --from <type>         source type (default float64, i.e. the value as JS reads it)
  --saturate            float8 / e8m0 targets: clamp out-of-range values to +/-max (the default)
  --no-saturate         float8 / e8m0 targets: out-of-range values become inf or NaN instead
  --round-mode <mode>   e8m0 targets (Cast-24+): ${ROUND_MODES.join(", ")} (default up)
  --opset <n>           the model opset whose Cast (or QuantizeLinear) version applies (default: the newest)
  --scale <value>       quantize instead: QuantizeLinear(value, scale, zero point) into --to, shown
                        with its code and its dequantized value (--from defaults to float32)
  --zero-point <value>  with --scale: the zero point, a value of the --to type (default none: 0)
  --scale-type <type>   with --scale: the scale's type (default the --from type, or float32)
  --json                print the rows as JSON (values as exact strings such as "-0" or "nan")
  -h, --help            show this help

Flags: exact, rounded, saturated (clamped to max instead of overflowing), overflow (became inf),
underflow (became 0), nan (a number became NaN), nan lost (the target has no NaN), out of range
(float to integer beyond its range, which wraps), nonzero (a value other than 0 or 1 cast to bool).

Example:
  tensorcast cast --from float32 --to float8e4m3fn 1.5 448 1000 nan
  tensorcast cast --to float8e5m2 --no-saturate 60000 -inf
  tensorcast cast --to int8 --scale 0.05 --zero-point 3 1.234 -7 100
`;

export const castCommand: Command = {
  name: "cast",
  summary: "show what values become when cast to a type, with codes and rounding errors",
  help: HELP,
  run(args: readonly string[], io: CliIO): number {
    const { options, positionals } = parseCommandArgs("cast", args, OPTIONS);
    if (options.help) {
      io.stdout.write(HELP);
      return EXIT_OK;
    }
    const bad = positionals.find((p) => !parseValue(p));
    if (bad !== undefined) throw new UsageError(notAValue(bad), "cast");
    const report = castValues(positionals, toRequest(options, positionals));
    io.stdout.write(options.json ? JSON.stringify(report, null, 2) + "\n" : renderCastReport(report));
    return EXIT_OK;
  },
};

function toRequest(options: OptionValues<typeof OPTIONS>, values: readonly string[]): CastRequest {
  if (options.to === undefined) {
    throw new UsageError("cast needs a target type: --to <type>, e.g. tensorcast cast --to float8e4m3fn 1.5", "cast");
  }
  if (values.length === 0) {
    throw new UsageError(`cast needs at least one value to cast: ${VALUE_SYNTAX}`, "cast");
  }
  if (options.scale === undefined && (options["zero-point"] !== undefined || options["scale-type"] !== undefined)) {
    throw new UsageError("--zero-point and --scale-type need --scale (they describe QuantizeLinear)", "cast");
  }
  if (options.scale !== undefined && options["round-mode"] !== undefined) {
    throw new UsageError("--round-mode is a Cast option (e8m0 targets); QuantizeLinear has none", "cast");
  }
  if (options.saturate && options["no-saturate"]) {
    throw new UsageError("--saturate and --no-saturate contradict each other; give at most one", "cast");
  }
  let roundMode: RoundMode | undefined;
  const mode = options["round-mode"];
  if (mode !== undefined) {
    roundMode = ROUND_MODES.find((m) => m === mode);
    if (!roundMode) {
      throw new UsageError(`--round-mode must be one of ${ROUND_MODES.join(", ")}; got ${JSON.stringify(mode)}`, "cast");
    }
  }
  let opset: number | undefined;
  if (options.opset !== undefined) {
    if (!/^\d+$/.test(options.opset)) {
      throw new UsageError(`--opset must be a whole number such as 19 or 28; got ${JSON.stringify(options.opset)}`, "cast");
    }
    opset = Number(options.opset);
  }
  const saturate = options.saturate ? true : options["no-saturate"] ? false : undefined;
  return {
    to: options.to,
    ...(options.from !== undefined ? { from: options.from } : {}),
    ...(saturate !== undefined ? { saturate } : {}),
    ...(roundMode !== undefined ? { roundMode } : {}),
    ...(opset !== undefined ? { opset } : {}),
    ...(options.scale !== undefined ? { scale: options.scale } : {}),
    ...(options["zero-point"] !== undefined ? { zeroPoint: options["zero-point"] } : {}),
    ...(options["scale-type"] !== undefined ? { scaleType: options["scale-type"] } : {}),
  };
}

/** A heading naming the cast and the options that matter for its target, then the table. */
export function renderCastReport(report: CastReport): string {
  expectObject(report, "renderCastReport's report");
  if (typeof report.to !== "string" || typeof report.from !== "string" || !Array.isArray(report.rows)) {
    throw new TensorcastError("INVALID_DATA", "renderCastReport takes what castValues returns (from, to and rows)");
  }
  const to = dtype(report.to);
  const notes: string[] = [];
  // Only mention options the target reads; saturate=false next to a float16 target would mislead.
  if (to.format?.overflow === "saturable") notes.push(`saturate=${report.saturate}`);
  if (to.name === "float8e8m0") notes.push(`round_mode=${report.roundMode}`);
  if (report.scale !== undefined) {
    notes.unshift(`scale ${report.scale} (${report.scaleType})${report.zeroPoint !== undefined ? `, zero point ${report.zeroPoint}` : ""}`);
  }
  const heading = `${report.from} -> ${report.to}  (${report.operator}, opset ${report.opset}` +
    `${notes.length > 0 ? `, ${notes.join(", ")}` : ""})\n`;
  const quantized = report.scale !== undefined;
  const table = renderTable(
    [
      { header: "input", align: "right" },
      { header: report.from, align: "right" },
      { header: "code" },
      { header: binaryHeader(to) },
      ...(quantized ? [{ header: report.to, align: "right" as const }, { header: "dequantized", align: "right" as const }] : [{ header: report.to, align: "right" as const }]),
      { header: "abs err", align: "right" },
      { header: "rel err", align: "right" },
      { header: "flag" },
    ],
    report.rows.map((r) => [
      r.input,
      // Blank when storing did not change the value, so the rows where it did stand out.
      r.sourceChanged ? r.source : "",
      r.code,
      r.binary,
      ...(quantized ? [r.quantized ?? "", r.result] : [r.result]),
      formatError(r.absError),
      formatError(r.relError),
      r.flag,
    ]),
  );
  return heading + table;
}
