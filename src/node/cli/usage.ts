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

/**
 * Exit codes: documented in `tensorcast --help` and README.md and relied on by scripts, so never
 * renumber them. 70 and 74 are sysexits.h's EX_SOFTWARE and EX_IOERR; a run stopped by a signal
 * exits with 128 + its number (signals.ts).
 */
export const EXIT_OK = 0;
/** A TensorcastError about the input: malformed data, an unknown type, a value out of range. */
export const EXIT_BAD_INPUT = 1;
export const EXIT_USAGE = 2;
/** A bug in tensorcast: an unexpected exception, or a check on its own output that failed (INTERNAL). */
export const EXIT_INTERNAL = 70;
/** The file system refused (IO_ERROR): a missing folder or file, permission denied, a full disk. */
export const EXIT_IO = 74;
