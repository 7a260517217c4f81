/**
 * How `inspect` and `diff` run their file job and print its report: Ctrl-C aborts the job cleanly
 * (workers stopped, no stack trace), and a progress bar is drawn on a terminal unless --quiet.
 * `convert` has its own variant, since it also listens for SIGTERM and must say that its output
 * was not written.
 */
import { ProgressBar, progressWanted } from "../convert/progress.js";
import { Interrupted } from "../convert/schedule.js";
import { EXIT_INTERRUPTED } from "./commands/convert.js";
import type { OptionSpecs } from "./args.js";
import { jsonText, writeText, type Text } from "./format.js";
import type { CliIO } from "./io.js";
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
 * @returns the exit code: EXIT_OK, or EXIT_INTERRUPTED after Ctrl-C.
 */
export async function runFileCommand<T>(
  io: CliIO, o: { readonly json?: boolean; readonly quiet?: boolean }, label: string,
  job: (hooks: FileJobHooks) => Promise<T>, render: (report: T) => Text,
): Promise<number> {
  const report = await runFileJob(io, o.quiet === true, label, job);
  if (report === undefined) return EXIT_INTERRUPTED;
  writeText(io.stdout, o.json ? jsonText(report) : render(report));
  return EXIT_OK;
}

/**
 * Runs `job` with an abort signal tied to SIGINT and, when a bar is wanted, a progress callback
 * drawing it with `label`.
 * @returns the job's result, or undefined once an interrupt was reported on stderr.
 */
async function runFileJob<T>(
  io: CliIO, quiet: boolean, label: string, job: (hooks: FileJobHooks) => Promise<T>,
): Promise<T | undefined> {
  const wantBar = progressWanted(io.stderr, quiet);
  let bar: ProgressBar | undefined;
  const controller = new AbortController();
  const onSignal = (): void => controller.abort();
  process.once("SIGINT", onSignal);
  try {
    return await job({
      signal: controller.signal,
      onProgress: wantBar
        ? (done, total) => {
            bar ??= new ProgressBar(io.stderr, total, label);
            bar.update(done);
          }
        : undefined,
    });
  } catch (e) {
    if (e instanceof Interrupted) {
      io.stderr.write("interrupted\n");
      return undefined;
    }
    throw e;
  } finally {
    bar?.finish();
    process.removeListener("SIGINT", onSignal);
  }
}
