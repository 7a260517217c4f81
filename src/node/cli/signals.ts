/**
 * Stopping a file job on SIGINT (Ctrl-C), SIGTERM (kill, a service manager) or SIGHUP (the
 * terminal closed): the job is aborted so it can remove its temporary file, and the command then
 * exits with 128 + the signal's number, as a process killed by that signal would (130, 143, 129),
 * so scripts and shells see which signal stopped it.
 */

/** The signals a job stops on, with their POSIX numbers. */
const STOP_SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const;

export type StopSignal = keyof typeof STOP_SIGNALS;

/** The exit code of a run stopped by `signal`: 128 + its number. */
export function exitCodeOf(signal: StopSignal): number {
  return 128 + STOP_SIGNALS[signal];
}

export interface StopListener {
  /** Aborts on the first stop signal. */
  readonly signal: AbortSignal;
  /** The signal that came, if one did. */
  received(): StopSignal | undefined;
  /** Removes the handlers: a later signal has its default effect again. */
  dispose(): void;
}

/** Listens for the stop signals until `dispose()`. */
export function listenForStop(): StopListener {
  const controller = new AbortController();
  let received: StopSignal | undefined;
  const handlers = (Object.keys(STOP_SIGNALS) as StopSignal[]).map((name) => {
    const handler = (): void => {
      received ??= name;
      controller.abort();
    };
    // once: a second Ctrl-C during the clean-up stops the process outright, as users expect.
    process.once(name, handler);
    return [name, handler] as const;
  });
  return {
    signal: controller.signal,
    received: () => received,
    dispose: () => {
      for (const [name, handler] of handlers) process.removeListener(name, handler);
    },
  };
}
