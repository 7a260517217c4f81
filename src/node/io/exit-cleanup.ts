/**
 * Temporary outputs removed when the process exits before they were committed or aborted: a
 * `process.exit()` in a callback, the CLI's handler of an uncaught exception (exit 70), or the
 * end of the event loop with a conversion still pending. Those paths skip every `finally`, and
 * without this the hidden temporary stayed until a later run removed it.
 *
 * A kill (SIGKILL, a V8 abort) runs no code at all; removeStaleTemporaries clears what it leaves.
 */
import { rmSync } from "node:fs";

/** Our temporaries still in progress: path -> whether it is a folder (a sharded checkpoint's). */
const pending = new Map<string, boolean>();
let listening = false;

/**
 * Removes `path` at process exit unless `forgetAtExit(path)` is called first.
 * @example removeAtExit(".out.safetensors.tensorcast-4242-9f2c1a.tmp") // gone after process.exit(3)
 */
export function removeAtExit(path: string, folder = false): void {
  pending.set(path, folder);
  if (!listening) {
    listening = true;
    process.on("exit", removePending);
  }
}

/** The temporary `path` was renamed into place or removed: leave its name alone at exit. */
export function forgetAtExit(path: string): void {
  pending.delete(path);
}

function removePending(): void {
  for (const [path, folder] of pending) {
    try {
      rmSync(path, { recursive: folder, force: true });
    } catch {
      // Exiting anyway; a later run's removeStaleTemporaries tries again.
    }
  }
  pending.clear();
}
