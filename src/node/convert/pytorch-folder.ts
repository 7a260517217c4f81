/**
 * `convert DIR -o OUTDIR` without --to for a folder of PyTorch shards (io/pytorch-folder.ts): the
 * safetensors folder transformers' save_pretrained writes for it, shard for shard
 * (pytorch_model-0000k-of-0000n.bin -> model-0000k-of-0000n.safetensors, pytorch_model.bin ->
 * model.safetensors), each shard as convertPytorchFile writes it, the folder's other files copied
 * as they are, and model.safetensors.index.json with the exact total_size when there is more than
 * one shard. Built in a hidden temporary folder, read back (index and every shard's header,
 * checkCheckpoint), then renamed to OUTDIR, as sharded.ts builds every output folder.
 */
import { promises as fsp } from "node:fs";
import { join } from "node:path";
import { checkCheckpoint, DEFAULT_INDEX_NAME, encodeIndex } from "../io/checkpoint.js";
import { forgetAtExit, removeAtExit } from "../io/exit-cleanup.js";
import { AtomicOutput, removeStaleTemporaries, systemError, temporaryPath } from "../io/file.js";
import { InputFiles } from "../io/input-files.js";
import { isPytorchFolder, readPytorchFolder, safetensorsShardName } from "../io/pytorch-folder.js";
import { utf8Bytes } from "../../io/onnx/precision/pb.js";
import { convertPytorchFile, type PytorchConvertOptions, type PytorchConvertReport } from "./pytorch.js";
import { checkOutputFolder, commitFolder, copyAtomically } from "./sharded.js";
import { Interrupted } from "./schedule.js";

export { isPytorchFolder as isPytorchCheckpointFolder };

export interface PytorchFolderReport {
  input: string;
  output: string;
  shards: PytorchConvertReport[];
  /** The index written ("model.safetensors.index.json"), or undefined for one shard. */
  indexName?: string;
  totalSize?: number;
  copied: string[];
  skipped: { name: string; reason: string }[];
}

/**
 * Converts the PyTorch folder `input` to the safetensors folder `outDir`.
 * @throws TensorcastError as readPytorchFolder and convertPytorchFile do; OUTPUT_IS_INPUT /
 *         INVALID_ATTRIBUTE for OUTDIR (checkOutputFolder's rules).
 */
export async function convertPytorchFolder(input: string, outDir: string, opts: PytorchConvertOptions = {}): Promise<PytorchFolderReport> {
  const c = await readPytorchFolder(input, { key: opts.key });
  const out = outDir.replace(/\/+$/, "") || outDir;
  const inputs = await InputFiles.of([
    { path: c.folder, role: "the input folder" },
    ...(c.indexName ? [{ path: join(c.folder, c.indexName), role: `the input's index ${c.indexName}` }] : []),
    ...c.shards.map((s) => ({ path: join(c.folder, s), role: `the input's shard ${s}` })),
    ...c.others.map((o) => ({ path: join(c.folder, o), role: `the input's file ${o}` })),
  ]);
  const replace = await checkOutputFolder(out, c.folder, opts.force ?? false, inputs);
  await removeStaleTemporaries(out, inputs);
  let building: string | undefined = temporaryPath(out);
  try {
    await fsp.mkdir(building);
  } catch (e) {
    throw systemError(out, `create it (as ${building})`, e);
  }
  removeAtExit(building, true);
  try {
    const shards: PytorchConvertReport[] = [];
    const weightMap = new Map<string, string>();
    let totalSize = 0;
    for (const s of c.shards) {
      const name = c.shards.length === 1 ? "model.safetensors" : safetensorsShardName(s);
      // The report names the shard where it will be, not in the folder being built.
      const r = { ...(await convertPytorchFile(join(c.folder, s), join(building, name), { ...opts, force: false })), output: join(out, name) };
      for (const t of r.tensors) {
        weightMap.set(t.name, name);
        totalSize += t.bytes;
      }
      shards.push(r);
    }
    const copied: string[] = [];
    for (const o of c.others) {
      await copyAtomically(join(c.folder, o), join(building, o), false, opts.signal);
      copied.push(o);
    }
    let indexName: string | undefined;
    if (c.shards.length > 1) {
      indexName = DEFAULT_INDEX_NAME;
      const { total_size: _, ...rest } = c.metadata as Record<string, unknown>;
      const index = await AtomicOutput.create(join(building, indexName));
      try {
        const bytes = utf8Bytes(encodeIndex(rest, weightMap, totalSize));
        await index.write(bytes, 0);
        await index.finish(bytes.length);
        await index.commit(false);
      } catch (e) {
        await index.abort();
        throw e;
      }
      // Read back: the index against every shard's header, as a safetensors checkpoint is checked.
      await checkCheckpoint(building, indexName, join(building, indexName));
    }
    if (opts.signal?.aborted) throw new Interrupted();
    await commitFolder(building, out, replace);
    forgetAtExit(building);
    building = undefined;
    return {
      input, output: out, shards, indexName, totalSize: indexName ? totalSize : undefined, copied,
      skipped: [...c.skipped],
    };
  } finally {
    if (building) {
      await fsp.rm(building, { recursive: true, force: true }).catch(() => undefined);
      forgetAtExit(building);
    }
  }
}
