/**
 * `tensorcast example`: what `npm start` shows. A handful of float32 values chosen to hit the edges
 * of each format: a value no binary format holds (0.1), exact ones, the float8e4m3fn max (448) and
 * the ties just past it (464 rounds to even, 480 saturates), the float16 max, something below the
 * float8 subnormals, -0, NaN and infinity.
 */
import { parseCommandArgs, type OptionSpecs } from "../args.js";
import { castValues, type CastReport } from "../castReport.js";
import type { Command } from "../command.js";
import type { CliIO } from "../io.js";
import { EXIT_OK, UsageError } from "../usage.js";
import { renderCastReport } from "./cast.js";

export const EXAMPLE_VALUES: readonly string[] = [
  "0.1", "1.5", "448", "464", "480", "1000", "65504", "1e-7", "-0", "nan", "inf",
];
export const EXAMPLE_FROM = "float32";
export const EXAMPLE_TARGETS: readonly string[] = ["float8e4m3fn", "float8e5m2", "float4e2m1", "bfloat16"];

const HINT = "Cast your own values: tensorcast cast --from float32 --to float8e5m2 --no-saturate 1000 60000 -inf\n";

const OPTIONS = {
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const HELP = `Usage: tensorcast example [--json]

Casts ${EXAMPLE_VALUES.join(", ")} (as ${EXAMPLE_FROM})
to ${EXAMPLE_TARGETS.join(", ")} and prints a table for each, as \`tensorcast cast\` would.

Options:
  --json       print the tables as a JSON array of cast reports
  -h, --help   show this help
`;

/** The example's reports, one per target type. */
export function exampleReports(): CastReport[] {
  return EXAMPLE_TARGETS.map((to) => castValues(EXAMPLE_VALUES, { from: EXAMPLE_FROM, to }));
}

export const exampleCommand: Command = {
  name: "example",
  summary: "cast a few telling float32 values to float8, float4 and bfloat16 (what npm start runs)",
  help: HELP,
  run(args: readonly string[], io: CliIO): number {
    const { options, positionals } = parseCommandArgs("example", args, OPTIONS);
    if (options.help) {
      io.stdout.write(HELP);
      return EXIT_OK;
    }
    if (positionals.length > 0) {
      throw new UsageError(
        `example takes no arguments; got ${positionals.map((p) => JSON.stringify(p)).join(" ")}. ` +
          "To cast values of your own, use tensorcast cast",
        "example",
      );
    }
    const reports = exampleReports();
    if (options.json) {
      io.stdout.write(JSON.stringify(reports, null, 2) + "\n");
      return EXIT_OK;
    }
    io.stdout.write(reports.map(renderCastReport).join("\n") + "\n" + HINT);
    return EXIT_OK;
  },
};
