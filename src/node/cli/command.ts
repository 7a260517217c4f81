/** The shape every subcommand has, so `main` and `help` can treat them alike. */
import type { CliIO } from "./io.js";

export interface Command {
  readonly name: string;
  /** One line for the command list in `tensorcast --help`. */
  readonly summary: string;
  /** The full text of `tensorcast help <name>`. */
  readonly help: string;
  /** Runs with the arguments after the command name; returns the exit code. */
  run(args: readonly string[], io: CliIO): number | Promise<number>;
}
