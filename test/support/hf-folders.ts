/**
 * Hugging Face folders for the folder tests, made from the committed fixtures
 * (test/fixtures/hf-gguf/): a sharded copy (two shards and model.safetensors.index.json), and
 * copies with a file taken away or changed, each keeping the folder's name (general.name is made from it).
 */
import { cpSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A copy of the folder `src` at `dir` with its model.safetensors cut in two shards (the sorted
 * names split in half, or before the tensor `at`), each shard's header listing its tensors in
 * reverse (so its order is not what sorting gives), and an index naming them.
 */
export function shardedCopy(src: string, dir: string, at?: string): string {
  cpSync(src, dir, { recursive: true });
  const buf = readFileSync(join(dir, "model.safetensors"));
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString("utf8")) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const names = Object.keys(header).filter((k) => k !== "__metadata__").sort();
  const half = at === undefined ? Math.ceil(names.length / 2) : names.indexOf(at);
  if (half <= 0) throw new Error(`shardedCopy: ${at} is not a tensor past the first`);
  const weightMap: Record<string, string> = {};
  [names.slice(0, half), names.slice(half)].forEach((list, i) => {
    const file = `model-0000${i + 1}-of-00002.safetensors`;
    const entries: Record<string, unknown> = {};
    const datas: Buffer[] = [];
    let offset = 0;
    for (const name of [...list].reverse()) {
      const h = header[name]!;
      const data = buf.subarray(8 + n + h.data_offsets[0], 8 + n + h.data_offsets[1]);
      entries[name] = { dtype: h.dtype, shape: h.shape, data_offsets: [offset, offset + data.length] };
      datas.push(data);
      offset += data.length;
      weightMap[name] = file;
    }
    const json = Buffer.from(JSON.stringify(entries));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    writeFileSync(join(dir, file), Buffer.concat([len, json, ...datas]));
  });
  rmSync(join(dir, "model.safetensors"));
  writeFileSync(join(dir, "model.safetensors.index.json"), JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }));
  return dir;
}

/** A copy of `src` at `dir` with the files `remove` taken away and `write` (name -> text or bytes) written. */
export function changedCopy(src: string, dir: string, remove: readonly string[], write: Readonly<Record<string, string | Uint8Array>> = {}): string {
  rmSync(dir, { recursive: true, force: true });
  cpSync(src, dir, { recursive: true });
  for (const f of remove) rmSync(join(dir, f));
  for (const [f, body] of Object.entries(write)) writeFileSync(join(dir, f), body);
  return dir;
}
