/**
 * The core's GGUF quantization job (src/io/gguf/quantize-job.ts), as the playground's GGUF panel
 * runs it: a model read from a Blob (blobSource, Blob.slice + arrayBuffer) and written to a sink
 * piece by piece gives the bytes of `tensorcast quantize IN.gguf --mode PRESET -o OUT.gguf`, for
 * whole-tensor bands and for bands of a few rows; no read of the Blob and no piece written is
 * larger than a band; the sink sees positions in order without gaps; stop() ends the job between
 * bands; bad input is the same TensorcastError as the CLI's.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { TensorcastError } from "../../../src/index.js";
import { blobSource, type BlobLike } from "../../../src/io/byte-source.js";
import { readGguf } from "../../../src/io/gguf/header.js";
import { ggufModel } from "../../../src/io/gguf/split.js";
import { quantizeGgufModel, type QuantizeGgufModelOptions } from "../../../src/io/gguf/quantize-job.js";
import { quantizeGgufFile } from "../../../src/node/quantize/gguf.js";
import { runCli } from "../../support/cli.js";
import { quantModelBytes, writeQuantModel } from "../../support/gguf-quant-models.js";

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), "tensorcast-gguf-job-"));
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A Blob of `bytes` whose slices are measured: the largest one taken since `reset`. */
function measuredBlob(bytes: Uint8Array): { blob: BlobLike; largest: () => number; reset: () => void } {
  const whole = new Blob([bytes]);
  let largest = 0;
  const blob: BlobLike = {
    size: whole.size,
    slice(start?: number, end?: number) {
      largest = Math.max(largest, (end ?? whole.size) - (start ?? 0));
      return whole.slice(start, end);
    },
  };
  return { blob, largest: () => largest, reset: () => { largest = 0; } };
}

/** quantizeGgufModel over a Blob of `bytes` into memory: the bytes, the pieces' sizes and the largest slice read. */
async function quantizeBlob(bytes: Uint8Array, opts: QuantizeGgufModelOptions): Promise<{ out: Uint8Array; pieces: number[]; largestRead: number }> {
  const { blob, largest, reset } = measuredBlob(bytes);
  const src = blobSource(blob, "model.gguf");
  const model = ggufModel([await readGguf(src, { name: "model.gguf" })]);
  const pieces: Uint8Array[] = [];
  let at = 0;
  // The header is read before the job, in the reader's own slices; the job's reads are the bands'.
  reset();
  const { layout } = await quantizeGgufModel(model, {
    write(piece, position) {
      assert.equal(position, at, "pieces in order, without gaps");
      at += piece.length;
      pieces.push(piece.slice());
    },
  }, opts);
  const out = new Uint8Array(layout.size);
  let p = 0;
  for (const piece of pieces) {
    out.set(piece, p);
    p += piece.length;
  }
  assert.equal(p, layout.size);
  return { out, pieces: pieces.map((x) => x.length), largestRead: largest() };
}

for (const [model, preset] of [["wide", "Q4_K_M"], ["wide", "Q8_0"], ["deep", "Q4_K_M"], ["wide", "Q3_K_S"]] as const) {
  test(`${model} as ${preset} from a Blob into a sink: the bytes of tensorcast quantize, whole tensors or bands of a few rows`, async () => {
    const input = join(dir, `${model}.gguf`);
    await writeQuantModel(model, input);
    const out = join(dir, `${model}-${preset}.gguf`);
    const r = await runCli("quantize", input, "--mode", preset, "-o", out, "-q", "--force");
    assert.equal(r.code, 0, r.err);
    const want = new Uint8Array(readFileSync(out));
    const bytes = await quantModelBytes(model);
    for (const bandValues of [undefined, 1024]) {
      const got = await quantizeBlob(bytes, { preset, ...(bandValues ? { bandValues } : {}) });
      assert.ok(Buffer.from(got.out).equals(want), `${model} ${preset} bands of ${bandValues ?? "1 Mi"} values`);
      if (bandValues !== undefined) {
        // A band of 1,024 values: at most 4 KiB read as F32 (2 KiB as F16), and no more written.
        assert.ok(got.largestRead <= 4 * bandValues, `the largest slice read is ${got.largestRead} bytes`);
        const header = got.pieces[0]!;
        assert.ok(Math.max(...got.pieces.slice(1)) <= 4 * bandValues, `the largest piece after the ${header}-byte header is ${Math.max(...got.pieces.slice(1))} bytes`);
      }
    }
  });
}

test("stop() ends the job between bands with what it throws; bad input is the CLI's TensorcastError", async () => {
  const bytes = await quantModelBytes("wide");
  let bands = 0;
  const stopped = await quantizeBlob(bytes, {
    preset: "Q4_K_M", bandValues: 1024,
    stop: () => {
      if (++bands === 5) throw new Error("stopped here");
    },
  }).then(() => undefined, (e: unknown) => e);
  assert.ok(stopped instanceof Error && stopped.message === "stopped here", String(stopped));
  assert.equal(bands, 5);
  const input = join(dir, "wide-bad.gguf");
  await writeQuantModel("wide", input);
  for (const preset of ["Q9_Z", "IQ2_XXS"]) {
    const node = await quantizeGgufFile(input, join(dir, "never.gguf"), { preset }).then(() => undefined, (e: unknown) => e);
    const page = await quantizeBlob(bytes, { preset }).then(() => undefined, (e: unknown) => e);
    assert.ok(node instanceof TensorcastError && page instanceof TensorcastError, preset);
    assert.deepEqual([page.code, page.message], [node.code, node.message], preset);
  }
});
