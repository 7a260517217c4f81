/**
 * The messages between the main thread and the conversion workers. Input bytes are transferred,
 * not copied; so are the converted bytes coming back, and the input's buffer with them, so that
 * the main thread can read the next chunk into it.
 */
import type { DTypeName } from "../../index.js";
import type { GgmlTypeName } from "../../ggml/types.js";
import type { GgmlBlocks } from "../io/gguf.js";
import type { ConvertStats, DiffStats, ValueStats } from "./kernel.js";

export type { GgmlBlocks };

export type Task =
  | {
      readonly op: "convert"; readonly raw: Uint8Array; readonly from: DTypeName; readonly to: DTypeName; readonly count: number;
      readonly saturate: boolean; readonly encoding: "raw" | "npy";
      /** Converted as the whole-model pass converts weights (castWeights). */
      readonly weights?: boolean;
      /** A buffer to write the converted bytes into when it has their length (reused between chunks). */
      readonly into?: Uint8Array;
      /** `raw` is these blocks, not `from`'s bytes (`from` is then float32). */
      readonly ggml?: GgmlBlocks;
    }
  | { readonly op: "values"; readonly raw: Uint8Array; readonly dtype: DTypeName; readonly count: number; readonly ggml?: GgmlBlocks }
  | { readonly op: "diff"; readonly a: Uint8Array; readonly aType: DTypeName; readonly b: Uint8Array; readonly bType: DTypeName; readonly count: number }
  | {
      /** A band of whole rows of one GGUF tensor, checked, made float32 and quantized (src/node/quantize/gguf.ts quantizeBand). */
      readonly op: "quantize"; readonly raw: Uint8Array; readonly from: GgmlTypeName; readonly to: GgmlTypeName; readonly ncols: number;
      /** The band's first block in the tensor's `from` data, and the tensor's name: for the errors. */
      readonly firstBlock: number; readonly tensor: string;
      /** The importance weights of the band's expert (ncols of them). */
      readonly imatrix?: Float32Array;
    };

export type TaskResult =
  | { readonly op: "convert"; readonly bytes: Uint8Array; readonly stats: ConvertStats; /** The task's input, handed back for reuse. */ readonly raw: Uint8Array }
  | { readonly op: "values"; readonly stats: ValueStats }
  | { readonly op: "diff"; readonly stats: DiffStats }
  | { readonly op: "quantize"; readonly bytes: Uint8Array };

export interface Request {
  readonly id: number;
  readonly task: Task;
}

export type Response =
  | { readonly id: number; readonly result: TaskResult }
  | { readonly id: number; readonly error: { readonly name: string; readonly code?: string; readonly message: string } };

/** What a worker sends once its script has loaded, before any task is sent to it. */
export interface Ready {
  readonly ready: true;
}

/** Every message a worker sends. */
export type WorkerMessage = Response | Ready;

export function isReady(m: WorkerMessage): m is Ready {
  return (m as Ready).ready === true;
}
