/**
 * Where the CLI writes. `main` takes these instead of touching `process` so that tests (and
 * programs embedding the CLI) can capture its output without spawning a process.
 */

/** Anything with a string `write`: `process.stdout`, a stream, or a test's collector. */
export interface Output {
  write(text: string): unknown;
}

export interface CliIO {
  readonly stdout: Output;
  readonly stderr: Output;
}

/** The real terminal. A function rather than a constant so importing this module reads no globals. */
export function processIO(): CliIO {
  return { stdout: process.stdout, stderr: process.stderr };
}
