/**
 * How `inspect` and `diff` run their file job and print its report: Ctrl-C, SIGTERM and SIGHUP
 * abort the job cleanly (workers stopped, no stack trace, exit 128 + the signal's number), and a
 * progress bar is drawn on a terminal unless --quiet. `convert` has its own variant, since it must
 * say that its output was not written.
 */
import { ProgressBar, progressWanted } from "../convert/progress.js";
import { Interrupted } from "../convert/schedule.js";
import type { OptionSpecs } from "./args.js";
import { jsonText, writeText, type Text } from "./format.js";
import type { CliIO } from "./io.js";
import { exitCodeOf, listenForStop, type StopSignal } from "./signals.js";
import { EXIT_OK } from "./usage.js";

/** The options `inspect` and `diff` both take for reading files and running the job. */
export const FILE_JOB_OPTIONS = {
  "npy-dtype": { type: "string", expects: "the type of a raw |V2 or |V1 .npy array, such as bfloat16" },
  fortran: { type: "string", expects: "transpose or refuse" },
  quiet: { type: "boolean", short: "q" },
  jobs: { type: "string", expects: "a number of worker threads" },
} as const satisfies OptionSpecs;

export interface FileJobHooks {
  readonly signal: AbortSignal;
  readonly onProgress: ((done: number, total: number) => void) | undefined;
}

/**
 * Runs `job` (see runFileJob), then prints its report as JSON or as `render` spells it.
 * @returns the exit code: EXIT_OK, or 128 + the signal's number after a stop signal.
 */
export async function runFileCommand<T>(
  io: CliIO, o: { readonly json?: boolean; readonly quiet?: boolean }, label: string,
  job: (hooks: FileJobHooks) => Promise<T>, render: (report: T) => Text,
): Promise<number> {
  const result = await runFileJob(io, o.quiet === true, label, job);
  if ("stopped" in result) return exitCodeOf(result.stopped);
  writeText(io.stdout, o.json ? jsonText(result.report) : render(result.report));
  return EXIT_OK;
}

/**
 * Runs `job` with an abort signal tied to the stop signals and, when a bar is wanted, a progress
 * callback drawing it with `label`.
 * @returns the job's result, or the signal that stopped it once that was reported on stderr.
 */
async function runFileJob<T>(
  io: CliIO, quiet: boolean, label: string, job: (hooks: FileJobHooks) => Promise<T>,
): Promise<{ report: T } | { stopped: StopSignal }> {
  const wantBar = progressWanted(io.stderr, quiet);
  let bar: ProgressBar | undefined;
  const stop = listenForStop();
  try {
    const report = await job({
      signal: stop.signal,
      onProgress: wantBar
        ? (done, total) => {
            bar ??= new ProgressBar(io.stderr, total, label);
            bar.update(done);
          }
        : undefined,
    });
    return { report };
  } catch (e) {
    if (e instanceof Interrupted) {
      const stopped = stop.received() ?? "SIGINT";
      io.stderr.write(`interrupted by ${stopped}\n`);
      return { stopped };
    }
    throw e;
  } finally {
    bar?.finish();
    stop.dispose();
  }
}
