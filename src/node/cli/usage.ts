/**
 * Usage errors: the command line itself is wrong (unknown command or option, missing value, a value
 * that is not a number). They exit with 2, unlike the library's TensorcastError (bad input, exit 1),
 * so scripts can tell "I called it wrong" from "the data was rejected".
 */
export class UsageError extends Error {
  /** The command whose help the message points to, if any. */
  readonly command: string | undefined;

  constructor(message: string, command?: string) {
    super(message);
    this.name = "UsageError";
    this.command = command;
  }
}

/** Exit codes: documented in `tensorcast --help` and relied on by scripts, so never renumber them. */
export const EXIT_OK = 0;
export const EXIT_BAD_INPUT = 1;
export const EXIT_USAGE = 2;
