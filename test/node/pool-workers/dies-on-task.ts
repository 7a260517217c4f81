/** A conversion worker that says it is ready, then ends its thread (exit code 7) on its first task. */
import { parentPort } from "node:worker_threads";

parentPort!.on("message", () => process.exit(7));
parentPort!.postMessage({ ready: true });
