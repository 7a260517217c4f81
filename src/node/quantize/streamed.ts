/**
 * A model file quantized without holding it in memory, as `convert` streams a model
 * (src/node/convert/model-precision.ts, whose skeleton and writer this shares):
 *
 * 1. IN is opened and checked (its side files inside its folder, long enough, matching their
 *    checksum); none of IN's files may be OUT (input-files.ts).
 * 2. The passes of quantizeModel run on IN's skeleton: every initializer with external data or of
 *    STREAM_FROM bytes or more is a placeholder without data. A pass that quantizes one reads it
 *    then, alone, from IN or its side file (a synchronous read: the passes are synchronous, and
 *    nothing else runs meanwhile); the tensors it makes of STREAM_FROM bytes or more are appended to
 *    a spill file beside OUT and stand in the graph as placeholders too. Memory holds the graph,
 *    one weight and its quantized form at a time.
 * 3. OUT is laid out by writer.ts (inline when it fits under protobuf's 2 GiB, else with its own
 *    side file `<OUT>.data`), the placeholders' data copied from IN (float16 modes: converted on
 *    the worker threads, as convert does) or from the spill file, in chunks; OUT is flushed, read
 *    back against the plan and renamed (side file first), and the spill file removed.
 *
 * The bytes equal quantizeModel's on the same model with its data inline (test/node/quantize-streamed.test.ts).
 */
import { closeSync, openSync, readSync, unlinkSync, writeSync } from "node:fs";
import { dtype, TensorcastError, type DType } from "../../index.js";
import { PbMessage } from "../../io/onnx/precision/pb.js";
import { quantizeModelWith, type QuantizeOptions, type QuantizeResult } from "../../io/onnx/quantize/model.js";
import { rawTensor, RELOAD_EXTERNAL_FROM } from "../../io/onnx/quantize/edit.js";
import type { QuantizeStorage } from "../../io/onnx/quantize/storage.js";
import { WireWriter } from "../../io/onnx/wire-writer.js";
import { checkSideFile, defaultJobs, filesBytes } from "../convert/convert.js";
import { editedModel, placeholderOf, refuseNestedExternal, skeletonOf, STREAM_FROM, streamedInitializers } from "../convert/model-precision.js";
import { TaskPool } from "../convert/pool.js";
import { DEFAULT_CHUNK_BYTES } from "../convert/schedule.js";
import { commitPlan, writePlan } from "../convert/write-plan.js";
import { AtomicOutput, RandomAccessFile, removeStaleTemporaries, temporaryPath } from "../io/file.js";
import { inputFilesOf } from "../io/input-files.js";
import type { OnnxFileTensor } from "../io/onnx.js";
import { openTensorFile, type OnnxModelFile } from "../io/reader.js";
import { checkReadRange, rawByteLength, type FileTensor } from "../io/tensors.js";
import { planEditedModel } from "../io/writer.js";

/** data_location DEFAULT (field 14, varint 0), as a protobuf serializer writes a field set to its default. */
const DATA_LOCATION_DEFAULT = new Uint8Array([0x70, 0x00]);

/** Marks a placeholder of a tensor the quantizer made: external_data's location (a NUL, which no real location has), its offset the tensor's index. */
const SPILLED = "\0tensorcast-quantized";

/** What quantizeStreamed wrote. */
export interface StreamedResult extends QuantizeResult {
  bytesIn: number;
  bytesOut: number;
  /** OUT's side file, when the result did not fit inline. */
  externalData?: string;
}

/** Where a placeholder's bytes are, for synchronous reads. */
interface Located {
  readonly path: string;
  readonly start: number;
  readonly byteLength: number;
}

/** A tensor the quantizer made, in the spill file. */
class SpilledTensor implements FileTensor {
  readonly size: number;
  file: RandomAccessFile | undefined;
  constructor(readonly name: string, readonly dtype: DType, readonly shape: readonly number[], readonly offset: number, readonly byteLength: number) {
    this.size = shape.reduce((n, d) => n * d, 1);
  }

  async read(start: number, count: number, into?: Uint8Array): Promise<Uint8Array> {
    checkReadRange(this, start, count, into);
    if (!this.file) throw new TensorcastError("INTERNAL", `${this.name}: the spill file is not open`);
    const from = rawByteLength(this.dtype, start);
    const length = rawByteLength(this.dtype, start + count) - from;
    return this.file.read(this.offset + from, length, into?.length === length ? into : undefined);
  }
}

/** The external_data entries of a placeholder: its location and offset. */
function placeholderEntry(t: PbMessage): { location: string; index: number } | undefined {
  let location: string | undefined;
  let offset: string | undefined;
  for (const e of t.subs(13, "StringStringEntryProto")) {
    if (e.string(1) === "location") location = e.string(2);
    else if (e.string(1) === "offset") offset = e.string(2);
  }
  return location === undefined || offset === undefined ? undefined : { location, index: Number(offset) };
}

/** Reads `length` bytes at `position` of the open file `fd` (readSync may return fewer). */
function readFully(fd: number, length: number, position: number, path: string): Uint8Array {
  const out = new Uint8Array(length);
  for (let at = 0; at < length;) {
    const n = readSync(fd, out, at, Math.min(length - at, 1 << 30), position + at);
    if (n === 0) throw new TensorcastError("INVALID_DATA", `${path}: ended ${length - at} bytes early`);
    at += n;
  }
  return out;
}

/**
 * Quantizes IN into OUT streamed (see the file comment); OUT has been checked by the caller.
 * @example await quantizeStreamed("big.onnx", "big_q4.onnx", { mode: "q4" }, false)  // { bytesOut: ..., quantized: 96, ... }
 * `externalData`: OUT's side file, relative to OUT's folder (see QuantizeFileOptions).
 * @throws TensorcastError as quantizeModel, naming IN; OUTPUT_IS_INPUT when OUT (or its side file) is one of IN's files.
 */
export async function quantizeStreamed(input: string, output: string, opts: QuantizeOptions, force: boolean, externalData?: string): Promise<StreamedResult> {
  const file = (await openTensorFile(input, { format: "onnx" })) as OnnxModelFile;
  const fds = new Map<string, number>();
  const spillPath = temporaryPath(output);
  let spillFd: number | undefined;
  let spillFile: RandomAccessFile | undefined;
  let out: AtomicOutput | undefined;
  let side: AtomicOutput | undefined;
  let pool: TaskPool | undefined;
  try {
    const inputs = await inputFilesOf(file);
    await inputs.refuse(output);
    const streamed = streamedInitializers(file);
    const located = new Map<OnnxFileTensor, Located>();
    for (const t of streamed) {
      if (t.storage === "external") {
        const { file: f, start } = await t.locate();
        located.set(t, { path: f.path, start, byteLength: t.byteLength });
      } else {
        located.set(t, { path: file.path, start: (t.raw ?? t.inPlace)!.offset, byteLength: t.byteLength });
      }
    }
    const skeleton = await skeletonOf(file, new Set(streamed));
    refuseNestedExternal(skeleton, input);

    const spilled: SpilledTensor[] = [];
    let spillSize = 0;
    const readAt = (l: Located): Uint8Array => {
      let fd = fds.get(l.path);
      if (fd === undefined) fds.set(l.path, (fd = openSync(l.path, "r")));
      return readFully(fd, l.byteLength, l.start, l.path);
    };
    let converted = 0;
    // Placeholders onnxruntime's reload would give data_location DEFAULT (markReloaded), by location and index.
    const reloaded = new Set<string>();
    const storage: QuantizeStorage = {
      readExternal(t) {
        const entry = placeholderEntry(t);
        if (entry?.location === SPILLED) {
          const s = spilled[entry.index];
          return readFully(spillFd!, s.byteLength, s.offset, spillPath);
        }
        const source = placeholderOf(t, file);
        const l = source && located.get(source);
        return l ? readAt(l) : "its data is external, outside the main graph's initializers";
      },
      store(name, dataType, dims, raw) {
        if (raw.length < STREAM_FROM) return rawTensor(name, dataType, dims, raw);
        spillFd ??= openSync(spillPath, "wx+", 0o600);
        for (let at = 0; at < raw.length;) at += writeSync(spillFd, raw, at, raw.length - at, spillSize + at);
        spilled.push(new SpilledTensor(name, dtype(dataType), dims, spillSize, raw.length));
        spillSize += raw.length;
        const w = new WireWriter(128);
        for (const d of dims) w.int64Field(1, d);
        w.uint32Field(2, dataType);
        w.stringField(8, name, "tensor name");
        for (const [key, value] of [["location", SPILLED], ["offset", String(spilled.length - 1)]]) w.fork(13).stringField(1, key).stringField(2, value).join();
        w.uint32Field(14, 1);
        return PbMessage.parse(w.finish().slice(), "TensorProto");
      },
      reloaded(t) {
        const entry = placeholderEntry(t);
        const bytes = entry?.location === SPILLED ? spilled[entry.index]?.byteLength : placeholderOf(t, file)?.byteLength;
        if (entry && bytes !== undefined && bytes >= RELOAD_EXTERNAL_FROM) reloaded.add(`${entry.location}\0${entry.index}`);
      },
      external(t) {
        converted += placeholderOf(t, file)?.byteLength ?? 0;
        return t.setVarint(2, dtype("float16").onnx);
      },
    };
    let result: QuantizeResult;
    try {
      result = quantizeModelWith(skeleton, opts, storage);
    } catch (e) {
      if (e instanceof TensorcastError && !e.message.startsWith(`${input}:`)) throw new TensorcastError(e.code, `${input}: ${e.message}`);
      throw e;
    }
    for (const fd of fds.values()) closeSync(fd);
    fds.clear();
    if (spillFd !== undefined) {
      closeSync(spillFd);
      spillFd = undefined;
      spillFile = await RandomAccessFile.open(spillPath);
      for (const s of spilled) s.file = spillFile;
    }
    const resolve = (t: PbMessage): FileTensor | undefined => {
      const entry = placeholderEntry(t);
      return entry?.location === SPILLED ? spilled[entry.index] : placeholderOf(t, file);
    };
    const suffix = (t: PbMessage): Uint8Array | undefined => {
      const entry = placeholderEntry(t);
      return entry && reloaded.has(`${entry.location}\0${entry.index}`) ? DATA_LOCATION_DEFAULT : undefined;
    };
    const plan = await planEditedModel(editedModel(result.bytes, file, resolve, suffix), output, { externalData });
    if (plan.external) await checkSideFile(plan.external.path, inputs, output, force);
    await removeStaleTemporaries(output, inputs);
    if (plan.external) {
      await removeStaleTemporaries(plan.external.path, inputs);
      side = await AtomicOutput.create(plan.external.path, { digests: true });
    }
    out = await AtomicOutput.create(output, { digests: true });
    pool = new TaskPool(defaultJobs(converted, undefined));
    await writePlan(plan, { input, output, out, side, pool, inFlight: 2 * Math.max(1, pool.size), chunkBytes: DEFAULT_CHUNK_BYTES, saturate: true, weights: true });
    await commitPlan(plan, out, side, output, force);
    out = undefined;
    side = undefined;
    return { ...result, ...(await filesBytes(file, plan)), externalData: plan.external?.path };
  } finally {
    for (const fd of fds.values()) closeSync(fd);
    if (spillFd !== undefined) closeSync(spillFd);
    if (spillFile) await spillFile.close();
    try {
      unlinkSync(spillPath);
    } catch {
      // Never made: nothing spilled.
    }
    if (out) await out.abort();
    if (side) await side.abort();
    if (pool) await pool.close();
    await file.close();
  }
}
