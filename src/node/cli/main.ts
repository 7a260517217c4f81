/**
 * The `tensorcast` command line: picks the command, runs it, and turns errors into exit codes.
 * Everything it prints goes through `io`, so it can run inside tests and other programs.
 */
import { TensorcastError } from "../../index.js";
import type { Command } from "./command.js";
import { castCommand } from "./commands/cast.js";
import { conformanceCommand } from "./commands/conformance.js";
import { convertCommand } from "./commands/convert.js";
import { diffCommand } from "./commands/diff.js";
import { exampleCommand } from "./commands/example.js";
import { inspectCommand } from "./commands/inspect.js";
import { indexCommand } from "./commands/shardIndex.js";
import { promoteCommand } from "./commands/promote.js";
import { quantizeModelCommand } from "./commands/quantize-model.js";
import { typesCommand } from "./commands/types.js";
import { renderTable, visible } from "./format.js";
import { processIO, type CliIO } from "./io.js";
import { EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_IO, EXIT_OK, EXIT_USAGE, UsageError } from "./usage.js";
import { packageVersion } from "./version.js";

export const COMMANDS: readonly Command[] = [castCommand, typesCommand, exampleCommand, conformanceCommand, promoteCommand, convertCommand, quantizeModelCommand, indexCommand, inspectCommand, diffCommand];

const commandNames = (): string => [...COMMANDS.map((c) => c.name), "help"].join(", ");

function overview(): string {
  const list = renderTable(
    [{ header: "" }, { header: "" }],
    [...COMMANDS.map((c) => [c.name, c.summary]), ["help", "show help for a command: tensorcast help cast"]],
  )
    .split("\n")
    .slice(1) // the table's (empty) header line
    .map((line) => (line === "" ? "" : `  ${line}`))
    .join("\n");
  return `tensorcast ${packageVersion()}: spec-exact ONNX data types and Cast in JavaScript

Usage: tensorcast <command> [options]

Commands:
${list}
Options:
  -h, --help   show this help
  --version    print the version

Exit codes: 0 success; 1 input the library rejects (its error code is printed); 2 usage error;
  70 internal error (a bug: please report it); 74 file system error (code IO_ERROR: a missing
  file or folder, permission denied, a full disk); 129, 130, 143 stopped by SIGHUP, SIGINT, SIGTERM.
`;
}

/**
 * Runs the CLI with `argv` (the arguments after the program name) and returns the exit code:
 * 0 success, 1 a TensorcastError (bad input), 2 a usage error (OUTPUT_IS_INPUT included), 70 a bug (INTERNAL, or any other
 * exception: one line asking for a report, the stack only with TENSORCAST_DEBUG=1), 74 IO_ERROR,
 * 128 + N after signal N (convert, inspect, diff).
 */
export async function main(argv: readonly string[], io: CliIO = processIO()): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (e) {
    if (e instanceof UsageError) {
      io.stderr.write(`error: ${visible(e.message)}\nRun "tensorcast help${e.command ? ` ${e.command}` : ""}" for usage.\n`);
      return EXIT_USAGE;
    }
    if (e instanceof TensorcastError && e.code !== "INTERNAL") {
      // A message can quote a file's bytes (a name, a header): never let them drive the terminal.
      io.stderr.write(`error: ${visible(e.message)} (code ${e.code})\n`);
      // An output that is one of the input's files is a bad -o, like IN itself: a usage error.
      return e.code === "IO_ERROR" ? EXIT_IO : e.code === "OUTPUT_IS_INPUT" ? EXIT_USAGE : EXIT_BAD_INPUT;
    }
    io.stderr.write(internalErrorReport(e));
    return EXIT_INTERNAL;
  }
}

/**
 * What the CLI prints for a bug: one line saying so and asking for a report, and the stack trace
 * only when TENSORCAST_DEBUG=1 asks (a stack means nothing to most users and hides the message).
 */
export function internalErrorReport(e: unknown): string {
  const message = e instanceof TensorcastError ? `${e.message} (code ${e.code})` : e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  let version: string;
  try {
    version = ` ${packageVersion()}`;
  } catch {
    version = ""; // The install itself is broken; the report must still come out.
  }
  const line =
    `internal error: ${visible(message.replace(/\s*\n\s*/g, " "))}. This is a bug in tensorcast${version}: please report it ` +
    "with the command you ran (TENSORCAST_DEBUG=1 prints the stack trace).\n";
  return process.env.TENSORCAST_DEBUG === "1" && e instanceof Error && e.stack ? `${line}${e.stack}\n` : line;
}

async function dispatch(argv: readonly string[], io: CliIO): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) {
    // No command is a usage error, but the overview is the most useful thing to say about it.
    io.stderr.write(overview());
    return EXIT_USAGE;
  }
  if (first === "--help" || first === "-h") return only(first, rest, () => io.stdout.write(overview()));
  if (first === "--version") return only(first, rest, () => io.stdout.write(`${packageVersion()}\n`));
  if (first === "help") return help(rest, io);
  const command = COMMANDS.find((c) => c.name === first);
  if (command) return command.run(rest, io);
  if (first.startsWith("-")) {
    throw new UsageError(
      `unknown option ${JSON.stringify(first)}; before a command tensorcast accepts --help and --version, ` +
        `and each command has its own options (tensorcast help <command>)`,
    );
  }
  throw new UsageError(`unknown command ${JSON.stringify(first)}; the commands are ${commandNames()}`);
}

function only(option: string, rest: readonly string[], print: () => void): number {
  if (rest.length > 0) {
    throw new UsageError(`${option} takes no arguments; got ${rest.map((a) => JSON.stringify(a)).join(" ")}`);
  }
  print();
  return EXIT_OK;
}

function help(rest: readonly string[], io: CliIO): number {
  if (rest.length === 0) {
    io.stdout.write(overview());
    return EXIT_OK;
  }
  const [name, ...extra] = rest;
  if (extra.length > 0) {
    throw new UsageError(`help takes one command name; got ${rest.map((a) => JSON.stringify(a)).join(" ")}`);
  }
  if (name === "help") {
    io.stdout.write("Usage: tensorcast help [command]\n\nShows the overview, or the help of one command.\n");
    return EXIT_OK;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) throw new UsageError(`no help for ${JSON.stringify(name)}: it is not a command; the commands are ${commandNames()}`);
  io.stdout.write(command.help);
  return EXIT_OK;
}
