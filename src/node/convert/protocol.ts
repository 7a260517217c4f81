/**
 * The messages between the main thread and the conversion workers. Input bytes are transferred,
 * not copied; so are the converted bytes coming back.
 */
import type { DTypeName } from "../../index.js";
import type { ConvertStats, DiffStats, ValueStats } from "./kernel.js";

export type Task =
  | { readonly op: "convert"; readonly raw: Uint8Array; readonly from: DTypeName; readonly to: DTypeName; readonly count: number; readonly saturate: boolean; readonly encoding: "raw" | "npy"; readonly weights?: boolean }
  | { readonly op: "values"; readonly raw: Uint8Array; readonly dtype: DTypeName; readonly count: number }
  | { readonly op: "diff"; readonly a: Uint8Array; readonly aType: DTypeName; readonly b: Uint8Array; readonly bType: DTypeName; readonly count: number };

export type TaskResult =
  | { readonly op: "convert"; readonly bytes: Uint8Array; readonly stats: ConvertStats }
  | { readonly op: "values"; readonly stats: ValueStats }
  | { readonly op: "diff"; readonly stats: DiffStats };

export interface Request {
  readonly id: number;
  readonly task: Task;
}

export type Response =
  | { readonly id: number; readonly result: TaskResult }
  | { readonly id: number; readonly error: { readonly name: string; readonly code?: string; readonly message: string } };
