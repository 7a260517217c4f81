/**
 * A model file the user opened (GGUF, safetensors or ONNX), read in the page: its metadata, its
 * tensors, and any run of a tensor's values as float64, read from the File a run at a time (a Blob
 * slice per run), so a file of many GiB is never loaded whole. The GGUF and safetensors readers are
 * loaded when a file is first opened: pages that never open one do not fetch them.
 */
import { cast, decodeModel, dequantizeGgml, Tensor, TensorcastError } from "tensorcast";

/** The formats the panel opens. */
export type ModelFormat = "gguf" | "safetensors" | "onnx";

export interface MetaRow {
  readonly key: string;
  /** A GGUF value type ("uint32", "array[string]"), or "string". */
  readonly type: string;
  readonly value: string;
}

export interface FileTensor {
  readonly name: string;
  /** The GGML type for GGUF (Q4_K), the tensorcast type otherwise (float16). */
  readonly type: string;
  readonly shape: readonly number[];
  readonly elements: number;
  readonly bytes: number;
  readonly bitsPerWeight: number;
}

export interface ModelFile {
  readonly format: ModelFormat;
  readonly name: string;
  readonly size: number;
  readonly metadata: readonly MetaRow[];
  readonly tensors: readonly FileTensor[];
  /** The elements a run of `read` should start on a multiple of (GGML blocks, packed bytes). */
  readonly runAlign: (i: number) => number;
  /** Elements [start, start + count) of tensor `i` as numbers (GGUF: dequantized as ggml does). */
  read(i: number, start: number, count: number): Promise<Float64Array | Float32Array>;
}

/** How many items of an array value the metadata table shows. */
const ARRAY_ITEMS = 8;
/** A string value is shown up to this many characters. */
const MAX_STRING = 160;
/** An ONNX model is decoded whole (protobuf has no index to read it in runs): larger ones are refused. */
export const MAX_ONNX_BYTES = 512 * 1024 * 1024;

function short(s: string): string {
  return s.length > MAX_STRING ? `${JSON.stringify(s.slice(0, MAX_STRING))}\u2026 (${s.length.toLocaleString("en")} characters)` : JSON.stringify(s);
}

type Readers = typeof import("tensorcast-model-files");

let readers: Promise<Readers> | undefined;
const readersModule = (): Promise<Readers> => (readers ??= import("tensorcast-model-files"));

/** The format of `file`: GGUF by its magic, else by its name's extension (safetensors when unknown). */
async function formatOf(file: File): Promise<ModelFormat> {
  const head = new Uint8Array(await file.slice(0, 4).arrayBuffer());
  if (head.length === 4 && String.fromCharCode(...head) === "GGUF") return "gguf";
  if (/\.gguf$/i.test(file.name)) return "gguf";
  if (/\.onnx$/i.test(file.name)) return "onnx";
  return "safetensors";
}

/** A value of any type a file stores as float64 numbers, for the statistics (complex and strings have none). */
function numbers(t: Tensor): Float64Array {
  if (t.dtype.kind === "complex" || t.dtype.kind === "string") {
    throw new TensorcastError("UNSUPPORTED_TYPE", `${t.dtype.name} tensors have no real values to plot`);
  }
  return (t.dtype.name === "float64" ? t : cast(t, "float64")).data as Float64Array;
}

/** Opens `file` (a File from the input or a drop) and reads its header. */
export async function openModelFile(file: File): Promise<ModelFile> {
  const format = await formatOf(file);
  if (format === "gguf") return openGguf(file);
  if (format === "onnx") return openOnnx(file);
  return openSafetensors(file);
}

function arrayText(itemType: string, items: ArrayLike<unknown>, summarized: boolean): string {
  const n = items.length;
  const first: string[] = [];
  for (let i = 0; i < Math.min(n, ARRAY_ITEMS); i++) {
    const v = items[i];
    first.push(typeof v === "string" ? short(v) : typeof v === "object" && v !== null ? "[\u2026]" : String(v));
  }
  return `${n.toLocaleString("en")} ${itemType} items${summarized ? " (the tokenizer's)" : ""}${n === 0 ? "" : `: ${first.join(", ")}${n > ARRAY_ITEMS ? ", \u2026" : ""}`}`;
}

async function openGguf(file: File): Promise<ModelFile> {
  const g = await readersModule();
  const model = g.ggufModel([await g.readGguf(g.blobSource(file, file.name), { name: file.name })]);
  const metadata: MetaRow[] = [];
  for (const e of model.metadata.values()) {
    if (typeof e.value === "object") {
      metadata.push({ key: e.key, type: `array[${e.value.itemType}]`, value: arrayText(e.value.itemType, e.value.items, e.key.startsWith("tokenizer.")) });
    } else {
      metadata.push({ key: e.key, type: e.type, value: typeof e.value === "string" ? short(e.value) : String(e.value) });
    }
  }
  const tensors = model.tensors.map((t): FileTensor => ({
    name: t.name, type: t.ggmlType.name, shape: t.shape, elements: t.elements, bytes: t.byteLength, bitsPerWeight: t.ggmlType.bitsPerWeight,
  }));
  return {
    format: "gguf", name: file.name, size: file.size, metadata, tensors,
    runAlign: (i) => model.tensors[i].ggmlType.blockSize,
    async read(i, start, count) {
      const t = model.tensors[i];
      const b = t.ggmlType.blockSize;
      const bytes = await g.readGgufBlocks(model, t, start / b, Math.ceil(count / b));
      // The core's decoders (the type by name: model-files.js may hold its own copy of the table).
      return dequantizeGgml(t.ggmlType.name, bytes).subarray(0, count);
    },
  };
}

async function openSafetensors(file: File): Promise<ModelFile> {
  const s = await readersModule();
  const f = await s.readSafetensors(s.blobSource(file, file.name), { name: file.name });
  const metadata: MetaRow[] = Object.entries(f.metadata ?? {}).map(([key, value]) => ({ key, type: "string", value: short(value) }));
  const tensors = f.tensors.map((t): FileTensor => ({
    name: t.name, type: t.dtype.name, shape: t.shape, elements: t.size, bytes: t.byteLength, bitsPerWeight: t.dtype.bits,
  }));
  return {
    format: "safetensors", name: file.name, size: file.size, metadata, tensors,
    runAlign: (i) => (f.tensors[i].dtype.packed ? 8 : 1),
    async read(i, start, count) {
      const t = f.tensors[i];
      const bytes = await s.readSafetensorsElements(f, t, start, count);
      return numbers(Tensor.fromBytes(bytes, t.dtype.name, [count]));
    },
  };
}

/** ModelProto's fields decodeModel does not keep (onnx.proto: producer_name 2, producer_version 3, domain 4, model_version 5). */
function modelStrings(bytes: Uint8Array): MetaRow[] {
  const names: Record<number, string> = { 2: "producer_name", 3: "producer_version", 4: "domain" };
  const rows: MetaRow[] = [];
  const varint = (at: number): [number, number] => {
    let v = 0;
    for (let shift = 1, i = at; i < bytes.length && i < at + 10; i++, shift *= 128) {
      v += (bytes[i] & 0x7f) * shift;
      if (bytes[i] < 0x80) return [v, i + 1];
    }
    return [-1, bytes.length];
  };
  // decodeModel has checked the whole message: the walk below only reads what it accepted.
  for (let at = 0; at < bytes.length;) {
    const [tag, next] = varint(at);
    if (tag < 0) break;
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (wire === 0) {
      const [v, after] = varint(next);
      if (field === 5) rows.push({ key: "model_version", type: "int64", value: String(v) });
      at = after;
    } else if (wire === 2) {
      const [length, start] = varint(next);
      if (length < 0) break;
      if (names[field]) rows.push({ key: names[field], type: "string", value: short(new TextDecoder().decode(bytes.subarray(start, start + length))) });
      at = start + length;
    } else if (wire === 5) at = next + 4;
    else if (wire === 1) at = next + 8;
    else break;
  }
  return rows;
}

async function openOnnx(file: File): Promise<ModelFile> {
  if (file.size > MAX_ONNX_BYTES) {
    throw new TensorcastError("INVALID_DATA", `${file.name} is ${file.size.toLocaleString("en")} bytes: the page decodes an ONNX model whole, up to ${MAX_ONNX_BYTES.toLocaleString("en")} bytes (tensorcast inspect reads larger ones in place)`);
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  const model = decodeModel(bytes);
  const metadata: MetaRow[] = [
    { key: "ir_version", type: "int64", value: String(model.irVersion) },
    ...model.opsetImports.map((o) => ({ key: `opset ${o.domain === "" ? "ai.onnx" : o.domain}`, type: "int64", value: String(o.version) })),
    ...modelStrings(bytes),
  ];
  const inits = model.graph.initializers;
  const tensors = inits.map(({ name, tensor }): FileTensor => ({
    name, type: tensor.dtype.name, shape: tensor.shape, elements: tensor.size, bytes: tensor.dtype.kind === "string" ? 0 : Math.ceil((tensor.size * tensor.dtype.bits) / 8), bitsPerWeight: tensor.dtype.bits,
  }));
  const values = new Map<number, Float64Array>();
  return {
    format: "onnx", name: file.name, size: file.size, metadata, tensors,
    runAlign: () => 1,
    async read(i, start, count) {
      let v = values.get(i);
      if (!v) {
        values.clear();
        v = numbers(inits[i].tensor);
        values.set(i, v);
      }
      return v.subarray(start, start + count);
    },
  };
}
