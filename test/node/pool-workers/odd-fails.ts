/**
 * A conversion worker that refuses to start in every thread of odd id and is the real one in the
 * others: a pool that starts two (consecutive ids) gets exactly one.
 */
import { threadId } from "node:worker_threads";

if (threadId % 2 === 1) throw new Error(`test worker ${threadId} refuses to start`);
await import("../../../src/node/convert/worker.js");
