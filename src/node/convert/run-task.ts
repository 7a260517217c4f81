/** Runs one task: the same code in a worker and, without workers, in the main thread. */
import { dequantizeGgml } from "../../ggml/dequantize.js";
import { ggmlType } from "../../ggml/types.js";
import { quantizeBand } from "../../io/gguf/quantize-band.js";
import { convertChunk, diffChunk, valueChunk } from "./kernel.js";
import type { GgmlBlocks, Task, TaskResult } from "./protocol.js";

/** The chunk's own bytes: `raw` itself, or the float32 values of the GGML blocks it holds. */
function chunkBytes(raw: Uint8Array, count: number, ggml: GgmlBlocks | undefined): Uint8Array {
  if (!ggml) return raw;
  const values = dequantizeGgml(ggmlType(ggml.type), raw);
  return new Uint8Array(values.buffer, ggml.skip * 4, count * 4);
}

export function runTask(task: Task): TaskResult {
  switch (task.op) {
    case "convert": {
      const raw = chunkBytes(task.raw, task.count, task.ggml);
      const { bytes, stats } = convertChunk(raw, task.from, task.to, task.count, task.saturate, task.encoding, task.into, task.weights);
      return { op: "convert", bytes, stats, raw: task.raw };
    }
    case "values":
      return { op: "values", stats: valueChunk(chunkBytes(task.raw, task.count, task.ggml), task.dtype, task.count) };
    case "diff":
      return { op: "diff", stats: diffChunk(task.a, task.aType, task.b, task.bType, task.count) };
    case "quantize":
      return { op: "quantize", bytes: quantizeBand(task.tensor, ggmlType(task.from), ggmlType(task.to), task.raw, task.ncols, task.firstBlock, task.imatrix) };
  }
}
