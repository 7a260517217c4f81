/**
 * The messages between the main thread and the conversion workers. Input bytes are transferred,
 * not copied; so are the converted bytes coming back, and the input's buffer with them, so that
 * the main thread can read the next chunk into it.
 */
import type { DTypeName } from "../../index.js";
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
  | { readonly op: "diff"; readonly a: Uint8Array; readonly aType: DTypeName; readonly b: Uint8Array; readonly bType: DTypeName; readonly count: number };

export type TaskResult =
  | { readonly op: "convert"; readonly bytes: Uint8Array; readonly stats: ConvertStats; /** The task's input, handed back for reuse. */ readonly raw: Uint8Array }
  | { readonly op: "values"; readonly stats: ValueStats }
  | { readonly op: "diff"; readonly stats: DiffStats };

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
