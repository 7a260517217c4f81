/** Runs one task: the same code in a worker and, without workers, in the main thread. */
import { convertChunk, diffChunk, valueChunk } from "./kernel.js";
import type { Task, TaskResult } from "./protocol.js";

export function runTask(task: Task): TaskResult {
  switch (task.op) {
    case "convert": {
      const { bytes, stats } = convertChunk(task.raw, task.from, task.to, task.count, task.saturate, task.encoding, task.into, task.weights);
      return { op: "convert", bytes, stats, raw: task.raw };
    }
    case "values":
      return { op: "values", stats: valueChunk(task.raw, task.dtype, task.count) };
    case "diff":
      return { op: "diff", stats: diffChunk(task.a, task.aType, task.b, task.bType, task.count) };
  }
}
