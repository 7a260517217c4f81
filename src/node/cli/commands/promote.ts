/**
 * `tensorcast promote`: OpenVINO ConvertPromoteTypes' common type for a pair, or the full matrix.
 */
import {
  PROMOTE_TYPES, PROMOTION_ERRORS, TensorcastError, openvinoTypeName, promoteTypes, type PromoteOptions,
} from "../../../index.js";
import { parseCommandArgs, type OptionSpecs, type OptionValues } from "../args.js";
import type { Command } from "../command.js";
import { renderTable } from "../format.js";
import type { CliIO } from "../io.js";
import { EXIT_OK, UsageError } from "../usage.js";

const OPTIONS = {
  unsafe: { type: "boolean" },
  pytorch: { type: "boolean" },
  "a-rank": { type: "string", expects: "the first input's rank, 0 for a scalar" },
  "b-rank": { type: "string", expects: "the second input's rank, 0 for a scalar" },
  "u64-target": { type: "string", expects: "an OpenVINO element type such as f32, i64 or f64" },
  table: { type: "boolean" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const HELP = `Usage: tensorcast promote <type> <type> [--unsafe] [--pytorch] [--a-rank <n>] [--b-rank <n>]
       tensorcast promote --table [--unsafe] [--pytorch] [--u64-target <type>]

Prints the common type OpenVINO's ConvertPromoteTypes-14 gives two inputs (its 2025 code, which
differs from its spec in places: see docs/semantics.md), or the whole matrix of the 18 types it
accepts: boolean, u1, u4, u8, u16, u32, u64, i4, i8, i16, i32, i64, f8e4m3, f8e5m2, f16, bf16,
f32, f64, and dynamic. Types may also be given by tensorcast name (float8e4m3fn) or alias.
A refused pair prints OpenVINO's sentence and exits with 1.

Options:
  --unsafe              promote_unsafe: allow lossy promotions instead of refusing them
  --pytorch             pytorch_scalar_promotion: a rank-0 input takes the other input's type
                        when both are integers or both floats
  --a-rank <n>          rank of the first input (0 = scalar); unknown if omitted, which makes the
                        result "dynamic" wherever --pytorch would look at it
  --b-rank <n>          rank of the second input, likewise
  --u64-target <type>   u64_integer_promotion_target: the result for u64 with a signed integer
                        under --unsafe (default f32)
  --table               print the matrix; with --pytorch, rows are the rank-0 input and columns
                        the input of rank 1. Short names: bool, e4m3, e5m2; refusals: !F, !U, !X, !P
  --json                print JSON instead of text
  -h, --help            show this help

Examples:
  tensorcast promote f16 bf16 --unsafe          f16 + bf16 -> f32 (tensorcast float32)
  tensorcast promote i64 u8 --pytorch --unsafe --a-rank 0 --b-rank 1
  tensorcast promote --table --pytorch
`;

/** Table spellings as in docs/semantics.md, so the printed matrix reads like the documented one. */
const SHORT: Readonly<Record<string, string>> = { boolean: "bool", f8e4m3: "e4m3", f8e5m2: "e5m2" };
const TAGS: readonly (readonly [tag: string, sentence: string])[] = [
  ["!F", PROMOTION_ERRORS.intToFloat],
  ["!U", PROMOTION_ERRORS.unsignedToSigned],
  ["!X", PROMOTION_ERRORS.unsupportedPair],
  ["!P", PROMOTION_ERRORS.pytorchScalar],
];

export const promoteCommand: Command = {
  name: "promote",
  summary: "show OpenVINO ConvertPromoteTypes' common type of two types, or the full matrix",
  help: HELP,
  run(args: readonly string[], io: CliIO): number {
    const { options, positionals } = parseCommandArgs("promote", args, OPTIONS);
    if (options.help) {
      io.stdout.write(HELP);
      return EXIT_OK;
    }
    const attributes: PromoteOptions = {
      promoteUnsafe: options.unsafe === true,
      pytorchScalarPromotion: options.pytorch === true,
      u64IntegerPromotionTarget: options["u64-target"] ?? "f32",
    };
    io.stdout.write(options.table ? table(options, positionals, attributes) : pair(options, positionals, attributes));
    return EXIT_OK;
  },
};

function pair(options: OptionValues<typeof OPTIONS>, positionals: readonly string[], attributes: PromoteOptions): string {
  if (positionals.length !== 2) {
    throw new UsageError(
      `promote takes two types (or --table); got ${positionals.length === 0 ? "none" : positionals.map((p) => JSON.stringify(p)).join(" ")}`,
      "promote",
    );
  }
  const aRank = rank(options["a-rank"], "--a-rank");
  const bRank = rank(options["b-rank"], "--b-rank");
  const [a, b] = positionals.map(openvinoTypeName);
  const result = promoteTypes(a, b, { ...attributes, aRank, bRank });
  if (options.json) {
    return JSON.stringify({
      a, b, aRank: aRank ?? null, bRank: bRank ?? null, ...attributes, u64IntegerPromotionTarget: openvinoTarget(attributes),
      result: result.name, dtype: result.dtype?.name ?? null,
    }, null, 2) + "\n";
  }
  // S(...) and D(...) are the OpenVINO spec's notation for rank-0 and dimensioned inputs.
  const operand = (t: string, r: number | undefined): string => (r === undefined ? t : r === 0 ? `S(${t})` : `D(${t})`);
  const unknownRank = attributes.pytorchScalarPromotion && (aRank === undefined || bRank === undefined);
  const note = result.dtype
    ? `tensorcast ${result.dtype.name}`
    : result.name === "dynamic" && unknownRank && a !== "dynamic" && b !== "dynamic"
      ? "decided by the ranks: give --a-rank and --b-rank"
      : "no tensorcast type";
  return `${operand(a, aRank)} + ${operand(b, bRank)} -> ${result.name} (${note})\n`;
}

function table(options: OptionValues<typeof OPTIONS>, positionals: readonly string[], attributes: PromoteOptions): string {
  if (positionals.length > 0) {
    throw new UsageError(`--table prints every pair and takes no types; got ${positionals.map((p) => JSON.stringify(p)).join(" ")}`, "promote");
  }
  if (options["a-rank"] !== undefined || options["b-rank"] !== undefined) {
    throw new UsageError("--table sets the ranks itself (rank 0 rows, rank 1 columns with --pytorch); drop --a-rank / --b-rank", "promote");
  }
  // Ranks 0 and 1: with --pytorch that is table C of the docs; without it they are never read.
  const cells = PROMOTE_TYPES.map((row) => PROMOTE_TYPES.map((column) => cell(row, column, { ...attributes, aRank: 0, bRank: 1 })));
  const heading =
    `ConvertPromoteTypes-14: promote_unsafe=${attributes.promoteUnsafe}, pytorch_scalar_promotion=${attributes.pytorchScalarPromotion}, ` +
    `u64_integer_promotion_target=${openvinoTarget(attributes)}`;
  const axes = attributes.pytorchScalarPromotion
    ? "rows: the rank-0 input; columns: the input of rank >= 1"
    : "rows: input 0; columns: input 1 (the order never matters)";
  if (options.json) {
    return JSON.stringify({
      ...attributes, u64IntegerPromotionTarget: openvinoTarget(attributes), rows: axes, types: PROMOTE_TYPES, cells,
      errors: Object.fromEntries(TAGS),
    }, null, 2) + "\n";
  }
  const short = (t: string): string => SHORT[t] ?? t;
  const rendered = renderTable(
    [{ header: "" }, ...PROMOTE_TYPES.map((t) => ({ header: short(t) }))],
    PROMOTE_TYPES.map((t, r) => [short(t), ...cells[r].map(short)]),
  );
  const legend = [axes, "bool = boolean, e4m3 = f8e4m3, e5m2 = f8e5m2", ...TAGS.map(([tag, sentence]) => `${tag}  ${sentence}`)];
  return `${heading}\n${rendered}\n${legend.join("\n")}\n`;
}

/** A result's OpenVINO name, or the tag of the refusal. */
function cell(a: string, b: string, opts: PromoteOptions): string {
  try {
    return promoteTypes(a, b, opts).name;
  } catch (e) {
    const tag = e instanceof TensorcastError ? TAGS.find(([, sentence]) => e.message.includes(sentence)) : undefined;
    if (!tag) throw e;
    return tag[0];
  }
}

/** The target as OpenVINO spells it: the heading should not echo "float64" back as given. */
function openvinoTarget(attributes: PromoteOptions): string {
  return promoteTypes("u64", "i8", { ...attributes, promoteUnsafe: true, pytorchScalarPromotion: false }).name;
}

function rank(text: string | undefined, option: string): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) {
    throw new UsageError(`${option} must be a whole number (0 for a scalar); got ${JSON.stringify(text)}`, "promote");
  }
  return Number(text);
}
