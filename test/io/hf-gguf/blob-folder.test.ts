/**
 * The core's folder job on a folder of Blobs (blobFolder: what the playground's folder panel
 * runs, with the page's Files): every fixture folder at every outtype is convert_hf_to_gguf.py's
 * file (the golden bytes, or their SHA-256 and size), a sharded copy gives the one-file folder's
 * bytes, a preset gives tensorcast/node's quantizeHfFolder bytes, no Blob slice of a weights file
 * is more than one tensor, and a PyTorch folder or a shard the index names but the folder lacks
 * is refused in words.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { TensorcastError } from "../../../src/index.js";
import { blobFolder, type BlobFolder } from "../../../src/io/hf-gguf/blob-folder.js";
import { hfQuantizeJob, hfTensorHeaders, planHfFolder, readHfFolderFiles, writeHfGguf, type HfGgufOuttypeOrAuto } from "../../../src/io/hf-gguf/folder.js";
import { runGgufJob } from "../../../src/io/gguf/quantize-job.js";
import type { GgufSink } from "../../../src/io/gguf/write.js";
import { quantizeHfFolder } from "../../../src/node/quantize/hf-gguf.js";
import { changedCopy, shardedCopy } from "../../support/hf-folders.js";
import { golden, HF_GGUF_CASES, HF_GGUF_DIR, OUTTYPES } from "./fixtures.js";

const OUT = join(process.cwd(), "test-output", "hf-gguf-blob-folder");

/** The folder `dir` as Blobs, each one's slices recorded (file name -> slice lengths). */
function folderOf(dir: string, name = dir.split("/").filter(Boolean).pop()!): { folder: BlobFolder; slices: Map<string, number[]> } {
  const slices = new Map<string, number[]>();
  const files = new Map(readdirSync(dir).map((n) => {
    const blob = new Blob([readFileSync(join(dir, n))]);
    const seen: number[] = [];
    slices.set(n, seen);
    return [n, { size: blob.size, slice: (a?: number, b?: number) => { seen.push((b ?? blob.size) - (a ?? 0)); return blob.slice(a, b); } }] as const;
  }));
  return { folder: blobFolder(name, files), slices };
}

function memorySink(): { sink: GgufSink; bytes(size: number): Uint8Array } {
  const parts: { at: number; b: Uint8Array }[] = [];
  return {
    sink: { write: (b, at) => void parts.push({ at, b: b.slice() }) },
    bytes(size) {
      const out = new Uint8Array(size);
      for (const p of parts) out.set(p.b, p.at);
      return out;
    },
  };
}

async function convert(folder: BlobFolder, outtype: HfGgufOuttypeOrAuto): Promise<Uint8Array> {
  const files = await readHfFolderFiles(folder);
  const { layout, tensors } = await folder.openWeights();
  const { plan } = planHfFolder(files, hfTensorHeaders(layout), outtype);
  const m = memorySink();
  return m.bytes((await writeHfGguf(m.sink, plan, tensors, 1000)).size);
}

const sha = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");

for (const c of HF_GGUF_CASES) {
  test(`blobFolder ${c}: every outtype is convert_hf_to_gguf.py's file, read by slices of at most a tensor`, async () => {
    for (const [t, outtype] of Object.entries(OUTTYPES)) {
      const { folder, slices } = folderOf(join(HF_GGUF_DIR, c));
      const ours = await convert(folder, outtype);
      const want = golden(c, t);
      assert.equal(ours.length, want.size, `${c} ${t}`);
      assert.equal(sha(ours), want.sha256, `${c} ${t}`);
      const { layout } = await folder.openWeights();
      const biggest = Math.max(...layout.tensors.flat().map((x) => x.byteLength));
      for (const shard of layout.shards) {
        const most = Math.max(...slices.get(shard)!);
        assert.ok(most <= Math.max(biggest, 8 + 1024 * 1024), `${c} ${shard}: a slice of ${most} bytes (largest tensor ${biggest})`);
      }
    }
  });
}

test("blobFolder: a sharded copy (index and two shards) gives the one-file folder's bytes; auto resolves as the weights say", async () => {
  mkdirSync(OUT, { recursive: true });
  const dir = shardedCopy(join(HF_GGUF_DIR, "llama"), join(OUT, "sharded", "llama"));
  for (const t of ["bf16", "q8_0"] as const) {
    assert.equal(sha(await convert(folderOf(dir).folder, OUTTYPES[t]!)), golden("llama", t).sha256, t);
  }
  assert.deepEqual(await convert(folderOf(dir).folder, "auto"), await convert(folderOf(join(HF_GGUF_DIR, "llama")).folder, "auto"));
});

test("blobFolder + hfQuantizeJob + runGgufJob: tensorcast/node's quantizeHfFolder bytes (Q4_K_M, Q8_0)", async () => {
  mkdirSync(OUT, { recursive: true });
  for (const [c, preset] of [["llama", "Q4_K_M"], ["qwen2", "Q8_0"], ["mixtral", "Q4_K_M"]] as const) {
    const out = join(OUT, `${c}-${preset}.gguf`);
    await quantizeHfFolder(join(HF_GGUF_DIR, c), out, { preset, force: true, jobs: 0 });
    const { folder } = folderOf(join(HF_GGUF_DIR, c));
    const files = await readHfFolderFiles(folder);
    const { layout, tensors } = await folder.openWeights();
    const { plan } = planHfFolder(files, hfTensorHeaders(layout), "auto");
    const m = memorySink();
    const { layout: written } = await runGgufJob(hfQuantizeJob(plan, tensors, { preset, chunkValues: 500 }), m.sink, { bandValues: 700 });
    assert.equal(sha(m.bytes(written.size)), sha(readFileSync(out)), `${c} ${preset}`);
  }
});

test("blobFolder refuses a PyTorch folder, and an index naming a shard the folder lacks, in words", async () => {
  mkdirSync(OUT, { recursive: true });
  const pt = changedCopy(join(HF_GGUF_DIR, "qwen2"), join(OUT, "pt", "qwen2"), ["model.safetensors"], { "pytorch_model.bin": readFileSync(join(HF_GGUF_DIR, "qwen2.pytorch_model.bin")) });
  await assert.rejects(folderOf(pt).folder.openWeights(), (e: unknown) => e instanceof TensorcastError && e.code === "UNSUPPORTED_TYPE" && e.message.startsWith("qwen2: holds PyTorch .bin weights (pytorch_model.bin)"));
  const dir = shardedCopy(join(HF_GGUF_DIR, "llama"), join(OUT, "lacking", "llama"));
  const { folder } = folderOf(dir);
  const files = new Map<string, Blob>();
  for (const n of readdirSync(dir)) if (n !== "model-00002-of-00002.safetensors") files.set(n, new Blob([readFileSync(join(dir, n))]));
  await assert.rejects(blobFolder("llama", files).openWeights(), {
    name: "TensorcastError", message: "llama/model-00002-of-00002.safetensors: is named by model.safetensors.index.json, but there is no such file in llama",
  });
  assert.ok((await folder.openWeights()).layout.indexed);
});
