/**
 * `tensorcast conformance <dir>`: runs ONNX backend node-test folders and prints one row per case.
 */
import { parseCommandArgs, type OptionSpecs } from "../args.js";
import type { Command } from "../command.js";
import { renderTable } from "../format.js";
import type { CliIO } from "../io.js";
import { EXIT_BAD_INPUT, EXIT_OK, UsageError } from "../usage.js";
import { findCases, runCase, totals, type CaseResult } from "../../conformance/suite.js";

const OPTIONS = {
  filter: { type: "string", expects: "a regular expression over folder names, such as ^test_cast" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpecs;

const HELP = `Usage: tensorcast conformance <dir> [--filter REGEX] [--json]

Runs every ONNX backend node-test folder under <dir> (model.onnx and test_data_set_N/input_K.pb,
output_K.pb) through tensorcast's own .onnx / .pb reader and graph runner (Cast, CastLike,
Reshape, BitCast, Constant, QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, and the
float32 operators of DynamicQuantizeLinear's function body), and compares each output bit for bit; any NaN equals any NaN of its
type. Prints one row per case and the totals.

Outcomes:
  pass                 every output equals the expected one
  fail                 an output differs (the first differing element is shown) or tensorcast threw
  expected difference  a case whose expectation upstream later changed (src/node/conformance/expected.ts)
  not implemented      the model uses an operator tensorcast does not have yet

Examples:
  tensorcast conformance test/fixtures/onnx-node --filter '^test_cast'
  tensorcast conformance /usr/share/libonnx-testdata/data/node --filter '^test_(cast|castlike|reshape)_'

Options:
  --filter <regex>   only folders whose name matches
  --json             print the rows and totals as JSON
  -h, --help         show this help

Exit code: 0 when nothing fails, 1 when a case fails, 2 for a usage error.
`;

function run(args: readonly string[], io: CliIO): number {
  const { options, positionals } = parseCommandArgs("conformance", args, OPTIONS);
  if (options.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) {
    throw new UsageError(`conformance takes one directory; got ${positionals.length} arguments`, "conformance");
  }
  let filter: RegExp | undefined;
  if (options.filter !== undefined) {
    try {
      filter = new RegExp(options.filter);
    } catch (e) {
      throw new UsageError(`--filter ${JSON.stringify(options.filter)} is not a regular expression: ${(e as Error).message}`, "conformance");
    }
  }
  const results: CaseResult[] = findCases(positionals[0], filter).map(runCase);
  const sum = totals(results);
  if (options.json) {
    io.stdout.write(`${JSON.stringify({ results, totals: sum }, null, 2)}\n`);
  } else {
    io.stdout.write(renderTable(
      [{ header: "test" }, { header: "result" }, { header: "detail" }],
      results.map((r) => [r.test, r.outcome, r.detail ?? ""]),
    ));
    io.stdout.write(
      `\n${results.length} cases: ${sum.pass} passed, ${sum.fail} failed, ` +
        `${sum["expected difference"]} expected differences, ${sum["not implemented"]} not implemented\n`,
    );
  }
  return sum.fail === 0 ? EXIT_OK : EXIT_BAD_INPUT;
}

export const conformanceCommand: Command = {
  name: "conformance",
  summary: "run ONNX backend node-test folders and compare bit for bit",
  help: HELP,
  run,
};
