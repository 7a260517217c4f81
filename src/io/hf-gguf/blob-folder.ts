/**
 * A Hugging Face folder held as Blobs by name (a page's `<input type=file webkitdirectory>` or
 * showDirectoryPicker, Node's openAsBlob): the CheckpointFolder the core's checks read
 * (src/io/checkpoint-layout.ts), the HfFolderReader of folder.ts, and each tensor's elements read
 * by Blob.slice, so nothing is loaded whole. Safetensors weights only: a folder of PyTorch .bin
 * shards is refused (tensorcast/node reads those).
 */
import { TensorcastError } from "../../errors.js";
import { blobSource, type BlobLike } from "../byte-source.js";
import { indexedLayout, isPytorchListing, locateWeights, missingFile, oneFileLayout, type CheckpointFolder, type CheckpointLayout, type FolderEntry, type ShardTensor } from "../checkpoint-layout.js";
import { readSafetensors, readSafetensorsElements, type SafetensorsFile } from "../safetensors/read.js";
import type { ElementReader, HfFolderReader } from "./folder.js";

/** A folder of Blobs, read as the core reads any folder. */
export interface BlobFolder extends CheckpointFolder, HfFolderReader {
  /**
   * The folder's safetensors weights, checked (the index against every shard's header), and each
   * tensor's elements by name.
   * @throws TensorcastError UNSUPPORTED_TYPE for PyTorch .bin weights; INVALID_DATA as the checks do.
   */
  openWeights(): Promise<{ layout: CheckpointLayout; tensors: ReadonlyMap<string, ElementReader> }>;
}

/**
 * The folder `folderName` whose plain files are `files` (name -> Blob) and whose subfolders are
 * `subfolders` (listed, never read).
 * @example const f = blobFolder("llama", new Map([["config.json", configBlob], ["model.safetensors", weights]]))
 */
export function blobFolder(folderName: string, files: ReadonlyMap<string, BlobLike>, subfolders: readonly string[] = []): BlobFolder {
  const pathOf = (name: string): string => `${folderName}/${name}`;
  const opened = new Map<string, SafetensorsFile>();
  const safetensors = async (name: string, role: string): Promise<SafetensorsFile> => {
    let f = opened.get(name);
    if (f !== undefined) return f;
    const blob = files.get(name);
    if (blob === undefined) throw missingFile(folder, name, role);
    f = await readSafetensors(blobSource(blob, pathOf(name)), { name: pathOf(name) });
    opened.set(name, f);
    return f;
  };
  const entries: FolderEntry[] = [...[...files.keys()].map((name) => ({ name, kind: "file" as const })), ...subfolders.map((name) => ({ name, kind: "folder" as const }))];
  const folder: BlobFolder = {
    folderName,
    label: folderName,
    pathOf,
    entries: async () => entries,
    async readOptional(name) {
      const blob = files.get(name);
      return blob === undefined ? undefined : blobSource(blob, pathOf(name)).read(0, blob.size);
    },
    async shardTensors(name, role): Promise<ShardTensor[]> {
      return (await safetensors(name, role)).tensors.map((t) => ({ name: t.name, dtype: t.dtype.name, shape: t.shape, byteLength: t.byteLength }));
    },
    async openWeights() {
      const names = [...files.keys()];
      if (isPytorchListing(names)) {
        throw new TensorcastError("UNSUPPORTED_TYPE", `${folderName}: holds PyTorch .bin weights (${names.filter((n) => n.endsWith(".bin") || n.endsWith(".bin.index.json")).sort().slice(0, 3).join(", ")}), which are read by tensorcast/node only (tensorcast convert DIR --to T -o OUT.gguf); a folder of Blobs takes safetensors weights (model.safetensors, or shards with model.safetensors.index.json)`);
      }
      const { indexName, weights } = locateWeights(folder, entries);
      let layout: CheckpointLayout;
      if (weights !== undefined) layout = await oneFileLayout(folder, indexName, weights);
      else {
        const index = files.get(indexName)!;
        layout = await indexedLayout(folder, indexName, blobSource(index, pathOf(indexName)), pathOf(indexName), entries);
      }
      const tensors = new Map<string, ElementReader>();
      for (const shard of layout.shards) {
        const f = await safetensors(shard, "is a shard of the folder");
        for (const t of f.tensors) tensors.set(t.name, { read: (start, count) => readSafetensorsElements(f, t, start, count) });
      }
      return { layout, tensors };
    },
  };
  return folder;
}
