/**
 * `tensorcast types`: every data type with its ONNX identity, width and limits.
 */
import { DTYPES, type DType } from "../../../index.js";
import { parseCommandArgs, type OptionSpecs } from "../args.js";
import type { Command } from "../command.js";
import { formatLimit, renderTable } from "../format.js";
import type { CliIO } from "../io.js";
import { EXIT_OK, UsageError } from "../usage.js";

const OPTIONS = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const HELP = `Usage: tensorcast types [--json]

Lists every data type: its name, ONNX TensorProto.DataType number and enum name, bits per element,
kind, smallest and largest finite value, smallest normal and subnormal value (floats), and the
other spellings every command accepts for it. Large and tiny powers of two print as 2^k.

Options:
  --json       print the types as JSON (limits as numbers; 64-bit integer limits as strings)
  -h, --help   show this help
`;

/** One type as `types --json` prints it. */
export interface TypeRow {
  readonly name: string;
  readonly onnx: number;
  readonly onnxName: string;
  readonly bits: number;
  readonly kind: string;
  readonly packed: boolean;
  /** Numbers, or decimal strings for the 64-bit integer limits JSON numbers cannot hold; null if undefined. */
  readonly min: number | string | null;
  readonly max: number | string | null;
  readonly minNormal: number | null;
  readonly minSubnormal: number | null;
  readonly aliases: readonly string[];
}

/** Every data type, in ONNX number order. */
export function typeRows(): TypeRow[] {
  return DTYPES.map((t: DType) => ({
    name: t.name,
    onnx: t.onnx,
    onnxName: t.onnxName,
    bits: t.bits,
    kind: t.kind,
    packed: t.packed,
    min: jsonLimit(t.min),
    max: jsonLimit(t.max),
    minNormal: t.minNormal ?? null,
    minSubnormal: t.minSubnormal ?? null,
    aliases: t.aliases,
  }));
}

function jsonLimit(x: number | bigint | undefined): number | string | null {
  if (x === undefined) return null;
  return typeof x === "bigint" ? String(x) : x;
}

export function renderTypes(): string {
  return renderTable(
    [
      { header: "name" },
      { header: "onnx", align: "right" },
      { header: "onnx name" },
      { header: "bits", align: "right" },
      { header: "kind" },
      { header: "min", align: "right" },
      { header: "max", align: "right" },
      { header: "min normal", align: "right" },
      { header: "min subnormal", align: "right" },
      { header: "aliases" },
    ],
    DTYPES.map((t) => [
      t.name,
      String(t.onnx),
      t.onnxName,
      // Strings have no fixed width; packed types say so, since their storage is not one byte each.
      t.bits === 0 ? "-" : t.packed ? `${t.bits} packed` : String(t.bits),
      t.kind,
      formatLimit(t.min),
      formatLimit(t.max),
      formatLimit(t.minNormal),
      formatLimit(t.minSubnormal),
      t.aliases.join(", "),
    ]),
  );
}

export const typesCommand: Command = {
  name: "types",
  summary: "list every data type with its ONNX number, width and limits",
  help: HELP,
  run(args: readonly string[], io: CliIO): number {
    const { options, positionals } = parseCommandArgs("types", args, OPTIONS);
    if (options.help) {
      io.stdout.write(HELP);
      return EXIT_OK;
    }
    if (positionals.length > 0) {
      throw new UsageError(`types takes no arguments; got ${positionals.map((p) => JSON.stringify(p)).join(" ")}`, "types");
    }
    io.stdout.write(options.json ? JSON.stringify(typeRows(), null, 2) + "\n" : renderTypes());
    return EXIT_OK;
  },
};
