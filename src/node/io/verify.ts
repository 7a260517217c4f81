/**
 * `verifyOutput(plan, temporary, output)`: reads a written file back before it is renamed into
 * place, so a writer bug never reaches the final name with exit code 0. The readers that read
 * inputs re-parse it (for .onnx and .pb the whole-file schema check of io/onnx/validate.ts, then
 * the initializers) and each tensor must be listed as the plan says: name, type, shape, and where
 * its bytes lie. Tensor data is skipped, not read, so this costs little even for large files.
 * An .onnx model's side file, which no header describes, is checked through the model (each
 * external tensor's location, offset and length, located by the reader's own checks) and then
 * byte for byte: every write to it is read back and its SHA-1 digest compared.
 */
import { TensorcastError } from "../../index.js";
import type { ExternalRef } from "./external-data.js";
import { fileError, RandomAccessFile, type AtomicOutput } from "./file.js";
import { npyPrefix, parseNpyHeader } from "./npy.js";
import { scanModelFile, scanTensorProtoFile, type ScannedTensor } from "./onnx.js";
import { parseSafetensorsHeader, readHeaderLength } from "./safetensors.js";
import type { OutputPlan, OutputTensor, SideFilePlan, TensorEntry } from "./writer.js";

/** A tensor as the written file lists it, and where its bytes lie when the check needs that. */
interface Found extends TensorEntry {
  readonly bytes?: { readonly offset: number; readonly length: number };
  /** Its data's place in a side file. */
  readonly external?: ExternalRef;
}

/**
 * Checks the file at `temporary` against `plan`.
 * @throws TensorcastError INTERNAL (a writer bug: the input was accepted, so the fault is
 *         tensorcast's) naming `output` and what differs; the caller removes the file.
 */
export async function verifyOutput(plan: OutputPlan, temporary: string, output: string, side?: AtomicOutput): Promise<void> {
  let problem: string | undefined;
  if (plan.external && !side) throw fileError("INTERNAL", output, "verifyOutput: the plan has a side file but none was given");
  try {
    const file = await RandomAccessFile.open(temporary);
    try {
      // The model names its side file by its final location; the read-back opens the temporary.
      const redirect = plan.external && side ? new Map([[plan.external.location, side.temporary]]) : undefined;
      problem = compare(plan, await listed(plan, file, redirect)) ?? (file.size !== plan.size ? `it has ${file.size} bytes, not the ${plan.size} planned` : undefined);
    } finally {
      await file.close();
    }
    if (problem === undefined && plan.external && side) problem = await checkSideFile(plan.external, side);
  } catch (e) {
    if (!(e instanceof TensorcastError)) throw e;
    problem = e.message.startsWith(`${temporary}: `) ? e.message.slice(temporary.length + 2) : e.message;
  }
  if (problem !== undefined) {
    throw fileError(
      "INTERNAL", output,
      `the ${plan.format} file written does not read back as planned (${problem}), so it was removed and nothing was written`,
    );
  }
}

/** The side file: its size, and every byte written to it read back and compared. */
async function checkSideFile(external: SideFilePlan, side: AtomicOutput): Promise<string | undefined> {
  const file = await RandomAccessFile.open(side.temporary);
  const size = file.size;
  await file.close();
  if (size !== external.size) return `its side file ${external.location} has ${size} bytes, not the ${external.size} planned`;
  const differs = await side.checkWritten();
  return differs === undefined ? undefined : `its side file ${external.location}: ${differs}`;
}

/** The tensors the written file lists, read by the same code that reads inputs. */
async function listed(plan: OutputPlan, file: RandomAccessFile, redirect: ReadonlyMap<string, string> | undefined): Promise<Found[]> {
  switch (plan.format) {
    case "onnx": {
      const model = await scanModelFile(file, redirect);
      await model.externalFiles?.close();
      return model.initializers.map(fromProto);
    }
    case "pb":
      return [fromProto(await scanTensorProtoFile(file))];
    case "safetensors": {
      const n = readHeaderLength(await file.read(0, Math.min(8, file.size)), file.size, file.path);
      const header = parseSafetensorsHeader(await file.read(8, n), file.size, file.path);
      return header.tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, bytes: { offset: header.dataStart + t.begin, length: t.end - t.begin } }));
    }
    case "pytorch":
    case "gguf":
      // planOutput never plans one: tensorcast reads PyTorch checkpoints and GGUF models and writes neither.
      throw new TensorcastError("INTERNAL", `${file.path}: a ${plan.format} output was planned`);
    case "npy": {
      const prefix = npyPrefix(await file.read(0, Math.min(12, file.size)), file.size, file.path);
      // A .npy file holds no name: the one tensor is the plan's, whatever the file is called.
      const h = parseNpyHeader(await file.read(prefix.headerStart, prefix.headerLength), prefix, file.size, file.path, plan.lists[0]?.name ?? "");
      return [{ ...h, bytes: { offset: h.dataStart, length: h.size * h.itemSize } }];
    }
  }
}

function fromProto(s: ScannedTensor): Found {
  return { name: s.name, dtype: s.dtype, shape: s.shape, bytes: s.raw, external: s.external };
}

/** What differs between the plan and what the file lists, or undefined. */
function compare(plan: OutputPlan, found: readonly Found[]): string | undefined {
  if (found.length !== plan.lists.length) return `it lists ${found.length} tensors, not ${plan.lists.length}`;
  // Name tables and labels are made only when needed: a file can list a million tensors, and
  // a file written as planned lists them in the plan's order.
  let byName: Map<string, Found> | undefined;
  const written = plan.tensors === plan.lists ? undefined : new Map<string, OutputTensor>(plan.tensors.map((t) => [t.name, t]));
  const label = (want: TensorEntry): string => `tensor ${JSON.stringify(want.name)}`;
  for (let i = 0; i < plan.lists.length; i++) {
    const want = plan.lists[i];
    const got = found[i].name === want.name ? found[i] : (byName ??= new Map(found.map((f) => [f.name, f]))).get(want.name);
    if (!got) return `${label(want)} is missing`;
    if (got.dtype !== want.dtype || !sameShape(got.shape, want.shape)) {
      return `${label(want)} reads back as ${got.dtype.name} [${got.shape.join(", ")}], not ${want.dtype.name} [${want.shape.join(", ")}]`;
    }
    // When every listed tensor is written, the lists are the written tensors themselves.
    const t = written ? written.get(want.name) : (want as OutputTensor);
    if (t?.side) {
      const x = got.external;
      if (!x || x.location !== plan.external?.location || x.offset !== t.offset || x.length !== t.byteLength) {
        const where = x ? `${x.length ?? "the rest of the"} bytes at ${x.offset} of ${x.location}` : got.bytes ? "its data inline" : "no data";
        return `${label(want)} has ${where}, not ${t.byteLength} bytes at ${t.offset} of ${plan.external?.location}`;
      }
    } else if (t && (got.bytes?.offset !== t.offset || got.bytes.length !== t.byteLength)) {
      const where = got.bytes ? `${got.bytes.length} bytes at ${got.bytes.offset}` : "no raw bytes";
      return `${label(want)} has ${where}, not ${t.byteLength} bytes at ${t.offset}`;
    }
  }
  return undefined;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
