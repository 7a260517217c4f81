/**
 * `convert IN.bin -o OUT.safetensors` without --to: a PyTorch checkpoint written as safetensors,
 * every tensor's type, shape and bytes kept: what `safetensors.torch.save_file` stores for the state
 * dict (tensors in its order, largest type first then by name; metadata {"format": "pt"}), with
 * tied weights (the same view of one storage under several names) kept once, under the first name
 * in the state dict's order, the others listed in the report. Strided views are written row-major,
 * as `.contiguous()` makes them. The output is planned, written, read back and renamed into place
 * as every conversion is (writer.ts, write-plan.ts).
 */
import { AtomicOutput, checkOutput, removeStaleTemporaries } from "../io/file.js";
import { inputFilesOf } from "../io/input-files.js";
import type { PytorchFile } from "../io/pytorch.js";
import { openTensorFile } from "../io/reader.js";
import { planOutput } from "../io/writer.js";
import { TaskPool } from "./pool.js";
import { DEFAULT_CHUNK_BYTES } from "./schedule.js";
import { commitPlan, writePlan } from "./write-plan.js";

export interface PytorchConvertOptions {
  /** The entry of the top-level dict holding the state dict. */
  key?: string;
  force?: boolean;
  chunkBytes?: number;
  signal?: AbortSignal;
  onProgress?: (done: number, total: number) => void;
}

export interface PytorchConvertReport {
  input: string;
  output: string;
  /** "zip" (torch.save since 1.6) or "legacy". */
  container: "zip" | "legacy";
  /** The tensors written, in OUT's order. */
  tensors: { name: string; dtype: string; shape: number[]; bytes: number }[];
  /** Name kept -> the tied names left out (they share its storage, offset, shape and strides). */
  tied: Record<string, string[]>;
  bytesIn: number;
  bytesOut: number;
  seconds: number;
}

/**
 * Writes the state dict of the PyTorch checkpoint `input` to the safetensors file `output`.
 * @throws TensorcastError as openTensorFile does for the input (INVALID_DATA for anything a
 *         weights_only load refuses); INVALID_ATTRIBUTE / IO_ERROR for OUT's path, before IN is read.
 */
export async function convertPytorchFile(input: string, output: string, opts: PytorchConvertOptions = {}): Promise<PytorchConvertReport> {
  const started = performance.now();
  await checkOutput(output, { input, force: opts.force });
  const file = (await openTensorFile(input, { format: "pytorch", pytorch: { key: opts.key } })) as PytorchFile;
  let out: AtomicOutput | undefined;
  const pool = new TaskPool(0);
  try {
    const inputs = await inputFilesOf(file);
    await inputs.refuse(output);
    const view = file.asSafetensors();
    const plan = await planOutput(view, "safetensors", new Map(), output);
    await removeStaleTemporaries(output, inputs);
    out = await AtomicOutput.create(output);
    await writePlan(plan, {
      input, output, out, pool, inFlight: 2, chunkBytes: opts.chunkBytes ?? DEFAULT_CHUNK_BYTES, saturate: true,
      signal: opts.signal, onProgress: opts.onProgress,
    });
    await commitPlan(plan, out, undefined, output, opts.force ?? false, opts.signal);
    out = undefined;
    return {
      input, output, container: file.container,
      tensors: view.tensors.map((t) => ({ name: t.name, dtype: t.dtype.name, shape: [...t.shape], bytes: t.byteLength })),
      tied: Object.fromEntries([...file.tied].map(([k, v]) => [k, [...v]])),
      bytesIn: file.size, bytesOut: plan.size, seconds: (performance.now() - started) / 1000,
    };
  } finally {
    if (out) await out.abort();
    await pool.close();
    await file.close();
  }
}
