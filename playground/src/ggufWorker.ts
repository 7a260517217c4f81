/**
 * The GGUF panels' worker: one job, off the page's thread: a GGUF model quantized to a preset, or
 * a Hugging Face folder (its Files by name) converted to an outtype or quantized to a preset, by the
 * core's folder job (src/io/hf-gguf/folder.ts), the one tensorcast/node runs, from hf-job.js (imported
 * when a folder's job first comes, so the GGUF panel does not load it). The input is read
 * from the Files a band of rows (or a chunk of a tensor) at a time (Blob slices); the bands are quantized on band workers
 * (ggufBandWorker.ts, one per core, at most MAX_BAND_WORKERS; in this worker on a single core),
 * two per band worker in flight; each piece of output goes to the page as it is made, in order, and
 * the next waits until the page has written it, so memory stays the bands in flight.
 */
import { blobSource, ggufModel, quantizeGgufModel, readGguf, readImatrix, type Band } from "tensorcast-gguf-job";
import type { BandReply, BandRequest, GgufJobMessage, GgufJobRequest, GgufWorkerRequest, HfJobRequest } from "./ggufMessages.js";

/** Band workers at most: past a few, the one thread reading the File and writing the output is the limit. */
const MAX_BAND_WORKERS = 8;

const scope = globalThis as unknown as {
  onmessage: ((e: MessageEvent) => void) | null;
  postMessage(message: GgufJobMessage, transfer: Transferable[]): void;
};

let acknowledged: (() => void) | undefined;

function send(m: GgufJobMessage, transfer: Transferable[] = []): void {
  scope.postMessage(m, transfer);
}

/** Hands `bytes` to the page and resolves once it has written them. */
function chunk(bytes: Uint8Array, position: number): Promise<void> {
  // A copy is transferred: the writer still reads a piece after writing it (the header's length)
  // and reuses its padding, so the piece itself must not be detached.
  const own = bytes.slice();
  const written = new Promise<void>((resolve) => { acknowledged = resolve; });
  send({ kind: "chunk", position, bytes: own }, [own.buffer as ArrayBuffer]);
  return written;
}

/** Band workers, each band to the one with the fewest waiting; their answers matched by id. */
class BandPool {
  private readonly workers: { worker: Worker; waiting: number }[] = [];
  private readonly pending = new Map<number, { resolve(b: Uint8Array): void; reject(e: unknown): void; on: { waiting: number } }>();
  private next = 0;

  constructor(size: number) {
    for (let i = 0; i < size; i++) {
      const worker = new Worker(new URL("./gguf-band-worker.js", import.meta.url), { type: "module" });
      const entry = { worker, waiting: 0 };
      worker.onmessage = (e: MessageEvent<BandReply>) => this.answer(e.data);
      worker.onerror = (e) => {
        e.preventDefault();
        for (const [id, p] of this.pending) if (p.on === entry) {
          this.pending.delete(id);
          p.reject(new Error(`a band worker failed: ${e.message}`));
        }
      };
      this.workers.push(entry);
    }
  }

  private answer(r: BandReply): void {
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    p.on.waiting--;
    if (r.error) p.reject(Object.assign(new Error(r.error.message), { name: r.error.name, ...(r.error.code ? { code: r.error.code } : {}) }));
    else p.resolve(r.bytes);
  }

  /** quantizeGgufModel's BandQuantizer: `raw` is handed over (transferred), not copied, when it owns its buffer. */
  quantize = (b: Band, raw: Uint8Array, firstBlock: number): Promise<Uint8Array> => {
    const on = this.workers.reduce((a, w) => (w.waiting < a.waiting ? w : a));
    const id = this.next++;
    const own = raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength && raw.buffer instanceof ArrayBuffer ? raw : raw.slice();
    const request: BandRequest = { id, tensor: b.p.name, from: b.p.from.name, to: b.p.to.name, raw: own, ncols: b.p.dims[0], firstBlock, ...(b.imatrix ? { imatrix: b.imatrix.slice() } : {}) };
    on.waiting++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, on });
      on.worker.postMessage(request, [own.buffer as ArrayBuffer]);
    });
  };

  get size(): number {
    return this.workers.length;
  }

  close(): void {
    for (const w of this.workers) w.worker.terminate();
  }
}

/** The band workers for this engine's cores (none on one core: bands are quantized here). */
function bandPool(): BandPool | undefined {
  const cores = Math.min(MAX_BAND_WORKERS, (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator?.hardwareConcurrency ?? 1);
  return cores > 1 ? new BandPool(cores) : undefined;
}

/** A progress message per percent at most. */
function progressSender(): (done: number, total: number) => void {
  let last = -1;
  return (done, total) => {
    const pct = Math.floor((done / total) * 100);
    if (pct === last) return;
    last = pct;
    send({ kind: "progress", done, total });
  };
}

const sink = { write: (bytes: Uint8Array, position: number) => chunk(bytes, position) };

async function run(req: GgufJobRequest): Promise<void> {
  const model = ggufModel([await readGguf(blobSource(req.file, req.file.name), { name: req.file.name })], req.file.name);
  // The file's name stands where llama-quantize stores the path given on its command line (quantize.imatrix.file).
  const im = req.imatrix ? await readImatrix(blobSource(req.imatrix, req.imatrix.name), req.imatrix.name) : undefined;
  const pool = bandPool();
  try {
    const { layout } = await quantizeGgufModel(model, sink, {
      preset: req.preset, allowRequantize: req.allowRequantize,
      ...(im ? { imatrix: true, imatrixData: im.weights, extraMetadata: im.metadata(req.imatrix!.name) } : {}),
      ...(pool ? { quantize: pool.quantize, inFlight: 2 * pool.size } : {}),
      onPlan: ({ plan }, planned) => send({
        kind: "plan", preset: plan.preset.name, size: planned.size, bandWorkers: pool?.size ?? 0,
        tensors: plan.tensors.map((p) => ({ name: p.name, from: p.from.name, to: p.to.name, ...(p.fallbackFrom ? { fallbackFrom: p.fallbackFrom.name } : {}) })),
      }),
      onProgress: progressSender(),
    });
    send({ kind: "done", size: layout.size });
  } finally {
    pool?.close();
  }
}

/** convert_hf_to_gguf's outtype names, as the plan's summary names them. */
const OUTTYPE_NAMES: Readonly<Record<string, string>> = { float32: "F32", float16: "F16", bfloat16: "BF16", q8_0: "Q8_0" };

/**
 * A Hugging Face folder's job: `convert DIR --to T` (T an outtype: the plan's tensors encoded as
 * they are read, in this worker) or `quantize DIR --mode PRESET` (the --outtype auto rows made
 * here, quantized on the band workers).
 */
async function runHf(req: HfJobRequest): Promise<void> {
  const { blobFolder, hfGgufLayout, hfQuantizeJob, hfTensorHeaders, planHfFolder, readHfFolderFiles, runGgufJob, writeHfGguf } = await import("tensorcast-hf-job");
  const folder = blobFolder(req.folderName, new Map(req.files.map((f) => [f.name, f.file])), req.subfolders);
  const files = await readHfFolderFiles(folder);
  const { layout, tensors } = await folder.openWeights();
  const headers = hfTensorHeaders(layout);
  if (req.mode === "convert") {
    if (!["float32", "float16", "bfloat16", "q8_0", "auto"].includes(req.outtype)) throw new Error(`outtype ${req.outtype}: the page offers float32, float16, bfloat16, q8_0 and auto`);
    const { plan, outtype } = planHfFolder(files, headers, req.outtype as "auto");
    const size = hfGgufLayout(plan).size;
    send({ kind: "plan", preset: OUTTYPE_NAMES[outtype] ?? outtype, size, bandWorkers: 0, tensors: plan.tensors.map((t) => ({ name: t.name, from: t.parts.length > 0 ? t.parts.map((x) => x.dtype).filter((d, i, a) => a.indexOf(d) === i).join(", ") : "generated", to: t.type })) });
    // Progress as the values are read: the writer takes each tensor's chunks in turn.
    const progress = progressSender();
    const total = plan.tensors.reduce((n, t) => n + t.shape.reduce((a, b) => a * b, 1), 0);
    let done = 0;
    const counted = new Map([...tensors].map(([name, r]) => [name, {
      read: async (start: number, count: number) => {
        const bytes = await r.read(start, count);
        done += count;
        progress(Math.min(done, total), total);
        return bytes;
      },
    }]));
    send({ kind: "done", size: (await writeHfGguf(sink, plan, counted)).size });
    return;
  }
  const { plan } = planHfFolder(files, headers, "auto");
  const job = hfQuantizeJob(plan, tensors, { preset: req.preset });
  const pool = bandPool();
  try {
    const { layout: out } = await runGgufJob(job, sink, {
      ...(pool ? { quantize: pool.quantize, inFlight: 2 * pool.size } : {}),
      onPlan: ({ plan: q }, planned) => send({
        kind: "plan", preset: q.preset.name, size: planned.size, bandWorkers: pool?.size ?? 0,
        tensors: q.tensors.map((p) => ({ name: p.name, from: p.from.name, to: p.to.name, ...(p.fallbackFrom ? { fallbackFrom: p.fallbackFrom.name } : {}) })),
      }),
      onProgress: progressSender(),
    });
    send({ kind: "done", size: out.size });
  } finally {
    pool?.close();
  }
}

scope.onmessage = (e) => {
  if (e.data === "written") {
    const f = acknowledged;
    acknowledged = undefined;
    f?.();
    return;
  }
  const req = e.data as GgufWorkerRequest;
  (req.kind === "hf" ? runHf(req) : run(req)).catch((err: unknown) => {
    const x = err as { name?: unknown; code?: unknown; message?: unknown };
    send({
      kind: "error", name: typeof x?.name === "string" ? x.name : "Error", message: typeof x?.message === "string" ? x.message : String(err),
      ...(typeof x?.code === "string" ? { code: x.code } : {}),
    });
  });
};
