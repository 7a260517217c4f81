/**
 * What every GGUF writer in tensorcast/node does before renaming: read the temporary back, and
 * rename a split model's parts only once all of them are checked.
 */
import { TensorcastError } from "../../errors.js";
import type { GgmlType } from "../../ggml/types.js";
import { readGguf } from "../../io/gguf/header.js";
import type { GgufMetadataEntry } from "../../io/gguf/values.js";
import { AtomicOutput, fileError, RandomAccessFile } from "./file.js";

/**
 * A GGUF file (or one part of a split model) written under its temporary name, read back: the
 * reader's view of its header is the plan's (size, keys and their types in order, every tensor's
 * name, type, dimensions and offset), and every byte is what was written (the digests `out` kept).
 * @throws TensorcastError INTERNAL naming `output` otherwise.
 */
export async function verifyWrittenGguf(out: AtomicOutput, output: string, metadata: readonly GgufMetadataEntry[], specs: readonly { name: string; ggmlType: GgmlType; dims: readonly number[] }[], offsets: readonly number[], size: number): Promise<void> {
  let problem: string | undefined;
  const file = await RandomAccessFile.open(out.temporary);
  try {
    const g = await readGguf(file, { name: output });
    const keys = [...g.metadata.keys()];
    if (file.size !== size) problem = `it has ${file.size} bytes, not ${size}`;
    else if (keys.join("\n") !== metadata.map((m) => m.key).join("\n")) problem = "its keys are not those planned";
    else if (metadata.some((m) => g.metadata.get(m.key)?.type !== m.type)) problem = "a key's type is not the one planned";
    else if (g.tensors.length !== specs.length) problem = `it lists ${g.tensors.length} tensors, not ${specs.length}`;
    else {
      const i = specs.findIndex((s, k) => {
        const t = g.tensors[k];
        return t.name !== s.name || t.ggmlType !== s.ggmlType || t.dims.join(",") !== s.dims.join(",") || t.offset !== offsets[k];
      });
      if (i >= 0) problem = `tensor ${i} (${specs[i].name}) is not listed as planned`;
    }
  } catch (e) {
    if (!(e instanceof TensorcastError)) throw e;
    problem = e.message;
  } finally {
    await file.close();
  }
  problem ??= await out.checkWritten();
  if (problem !== undefined) throw fileError("INTERNAL", output, `the GGUF file written does not read back as planned (${problem}), so it was removed and nothing was written`);
}

/**
 * Renames every checked part into place, in order; each renamed one leaves `outs`, so the caller's
 * abort of what is left removes only the temporaries not yet renamed.
 */
export async function commitAll(outs: AtomicOutput[], force: boolean): Promise<void> {
  while (outs.length > 0) {
    await outs[0]!.commit(force);
    outs.shift();
  }
}
