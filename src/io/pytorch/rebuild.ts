/**
 * What the allowed globals do when a pickle calls them (REDUCE) or makes one (NEWOBJ), written
 * again for plain values: the tensor rebuild functions of torch._utils become a `PtTensor` (a
 * view of a storage: offset, shape, strides, all in elements), the containers become dicts, lists
 * and sets, torch.Size a tuple. Only what a state dict uses is built; every other allowed global
 * (quantized, sparse, nested, meta tensors, the legacy tensor classes) is UNSUPPORTED_TYPE, and a
 * global that Python could not call with these arguments is INVALID_DATA.
 */
import { TensorcastError } from "../../errors.js";
import { keyOf, typeName, type PickleHooks, type PyDict, type PyValue } from "./pickle.js";
import { utf8Bytes } from "../onnx/precision/pb.js";
import { REBUILD_FUNCTIONS, STORAGE_DTYPES, TORCH_DTYPES } from "./allowed-globals.js";

/** A storage a tensor views: `bytes` bytes from byte `start` of the container's storage `key`. */
export interface StorageRef {
  readonly key: string;
  /** The storage's torch dtype ("float32", "uint8" for an UntypedStorage). */
  readonly dtype: string;
  readonly start: number;
  readonly bytes: number;
}

/** A tensor as rebuilt: a view of `storage`; offset and strides count elements of `dtype`. */
export interface PtTensor {
  readonly storage: StorageRef;
  /** torch's dtype name, without "torch." ("float32", "bfloat16", "complex64", ...). */
  readonly dtype: string;
  readonly offset: number;
  readonly shape: readonly number[];
  readonly stride: readonly number[];
}

/** Bytes per element of a torch dtype (storage sizes count these). */
export function torchItemSize(d: string): number {
  switch (d) {
    case "complex128": return 16;
    case "float64": case "int64": case "uint64": case "complex64": return 8;
    case "float32": case "int32": case "uint32": case "qint32": case "complex32": return 4;
    case "float16": case "bfloat16": case "int16": case "uint16": case "bits16": return 2;
    default: return 1;
  }
}

const bad = (message: string): TensorcastError => new TensorcastError("INVALID_DATA", message);

/** The torch dtype a storage type global stands for: "torch.FloatStorage" -> "float32". */
export function storageTypeDtype(v: PyValue): string {
  if (v !== null && typeof v === "object" && v.type === "global") {
    if (v.name === "torch.storage.UntypedStorage") return "uint8";
    const m = /^torch\.(?:cuda\.)?([A-Za-z0-9]+Storage)$/.exec(v.name);
    if (m && STORAGE_DTYPES[m[1]] !== undefined) return STORAGE_DTYPES[m[1]];
  }
  throw bad(`a persistent id's storage type is ${typeName(v)}, not a storage class such as torch.FloatStorage`);
}

/** A non-negative safe integer argument, or INVALID_DATA naming it. */
export function expectCount(v: PyValue, what: string): number {
  if (typeof v === "boolean" || typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
    throw bad(`${what} is ${describePy(v)}, not a non-negative integer below 2^53`);
  }
  return v;
}

/** A short spelling of a pickled value for messages (bounded: never the whole of a big value). */
export function describePy(v: PyValue): string {
  if (v === null) return "None";
  if (typeof v === "string") return v.length > 60 ? `a str of ${v.length} characters` : JSON.stringify(v);
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  if (v.type === "float") return String(v.value);
  if (v.type === "list" || v.type === "tuple" || v.type === "set") return `a ${v.type} of ${v.items.length}`;
  if (v.type === "dict") return `${v.kind === "dict" ? "a dict" : `an ${v.kind}`} of ${v.entries.size}`;
  return typeName(v);
}

function items(v: PyValue, what: string): readonly PyValue[] {
  if (v !== null && typeof v === "object" && (v.type === "tuple" || v.type === "list")) return v.items;
  throw bad(`${what} is ${describePy(v)}, not a tuple`);
}

function counts(v: PyValue, what: string, max: number): number[] {
  const list = items(v, what);
  if (list.length > max) throw bad(`${what} has ${list.length} dimensions, more than ${max}`);
  return list.map((d, i) => expectCount(d, `${what}[${i}]`));
}

/** torch's own limit on dimensions (at::native's 64), far above any checkpoint's. */
const MAX_DIMS = 64;

/** The tensor a rebuild made, or undefined for any other value. */
export function tensorOf(v: PyValue): PtTensor | undefined {
  return v !== null && typeof v === "object" && v.type === "tensor" ? (v.value as PtTensor) : undefined;
}

function storageOf(v: PyValue, what: string): StorageRef {
  if (v !== null && typeof v === "object" && v.type === "persistent") return v.value as StorageRef;
  throw bad(`${what} is ${describePy(v)}, not a storage (a persistent id)`);
}

function expectBool(v: PyValue, what: string): void {
  if (typeof v !== "boolean") throw bad(`${what} is ${describePy(v)}, not True or False`);
}

function expectHooks(v: PyValue, what: string): void {
  if (v === null || typeof v !== "object" || v.type !== "dict") throw bad(`${what} is ${describePy(v)}, not an OrderedDict of hooks`);
}

/** A tensor's metadata (conj / neg bits): only their absence is read. */
function expectPlainMetadata(v: PyValue | undefined): void {
  if (v === undefined || v === null) return;
  if (typeof v !== "object" || v.type !== "dict") throw bad(`a tensor's metadata is ${describePy(v)}, not a dict`);
  for (const [k, value] of v.entries.values()) {
    if (value === false) continue;
    throw new TensorcastError("UNSUPPORTED_TYPE", `a tensor is saved with the ${describePy(k)} bit set (a lazily conjugated or negated view), which is not read`);
  }
}

/**
 * The view `shape` / `stride` at `offset` over `storage`, checked as torch's set_ checks it: it
 * must lie inside the storage's bytes.
 */
export function makeTensor(storage: StorageRef, dtype: string, offsetV: PyValue, sizeV: PyValue, strideV: PyValue): PyValue {
  const offset = expectCount(offsetV, "a tensor's storage offset");
  const shape = counts(sizeV, "a tensor's size", MAX_DIMS);
  const stride = counts(strideV, "a tensor's stride", MAX_DIMS);
  if (stride.length !== shape.length) throw bad(`a tensor's size has ${shape.length} dimensions and its stride ${stride.length}`);
  const item = torchItemSize(dtype);
  let extent = 0;
  if (!shape.includes(0)) {
    // The last element's index, + 1: in elements; each term is checked to stay exact.
    let last = offset;
    for (let i = 0; i < shape.length; i++) last += (shape[i] - 1) * stride[i];
    extent = last + 1;
    if (!Number.isSafeInteger(extent * item)) throw bad(`a tensor of size [${shape.join(", ")}] and stride [${stride.join(", ")}] reaches past 2^53 bytes`);
  }
  let elements = 1;
  for (const d of shape) elements *= d;
  if (!Number.isSafeInteger(elements)) throw bad(`a tensor of size [${shape.join(", ")}] has more than 2^53 elements`);
  if (extent * item > storage.bytes) {
    throw bad(
      `a tensor of size [${shape.join(", ")}], stride [${stride.join(", ")}] and storage offset ${offset} needs ${extent * item} bytes ` +
        `of its storage ${JSON.stringify(storage.key)}, which has ${storage.bytes}`,
    );
  }
  const t: PtTensor = { storage, dtype, offset, shape, stride };
  return { type: "tensor", value: t };
}

function torchDtypeOf(v: PyValue, what: string): string {
  if (v !== null && typeof v === "object" && v.type === "global" && v.name.startsWith("torch.")) {
    const d = v.name.slice("torch.".length);
    if (TORCH_DTYPES[d] !== undefined) return d;
  }
  throw bad(`${what} is ${describePy(v)}, not a torch dtype`);
}

function arity(fn: string, args: readonly PyValue[], min: number, max: number): void {
  if (args.length < min || args.length > max) {
    throw bad(`${fn} takes ${min === max ? min : `${min} to ${max}`} arguments, got ${args.length}`);
  }
}

function newDict(kind: PyDict["kind"], from?: PyValue): PyValue {
  const d: PyDict = { type: "dict", kind, entries: new Map() };
  if (from === undefined) return d;
  if (from !== null && typeof from === "object" && from.type === "dict") {
    for (const [k, e] of from.entries) d.entries.set(k, [e[0], e[1]]);
    return d;
  }
  for (const pair of items(from, `${kind}'s argument`)) {
    const kv = items(pair, `an item of ${kind}'s argument`);
    if (kv.length !== 2) throw bad(`an item of ${kind}'s argument has ${kv.length} values, not a key and a value`);
    const key = keyOf(kv[0]);
    if (key === undefined) throw bad(`${kind} is given ${typeName(kv[0])} as a key, which is not hashable here`);
    const old = d.entries.get(key);
    d.entries.set(key, [old ? old[0] : kv[0], kv[1]]);
  }
  return d;
}

function latin1(s: string, what: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 255) throw bad(`${what}: character ${i} is not latin-1`);
    out[i] = c;
  }
  return out;
}

function encodeText(s: PyValue, enc: PyValue, what: string): Uint8Array {
  if (typeof s !== "string" || typeof enc !== "string") throw bad(`${what} takes a str and an encoding, got ${describePy(s)} and ${describePy(enc)}`);
  const e = enc.toLowerCase().replace(/_/g, "-");
  if (e === "latin1" || e === "latin-1" || e === "iso-8859-1") return latin1(s, what);
  if (e === "utf-8" || e === "utf8") return utf8Bytes(s);
  throw new TensorcastError("UNSUPPORTED_TYPE", `${what} with the encoding ${JSON.stringify(enc.slice(0, 40))}; latin-1 and utf-8 are read`);
}

const TENSOR_RESULTS = new Set(["torch._utils._rebuild_tensor", "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_tensor_v3", "torch._utils._rebuild_parameter", "torch._utils._rebuild_parameter_with_state"]);

/** REDUCE of the allowed global `fn`. */
export function callGlobal(fn: string, args: readonly PyValue[]): PyValue {
  switch (fn) {
    case "torch._utils._rebuild_tensor": {
      arity(fn, args, 4, 4);
      const s = storageOf(args[0], "_rebuild_tensor's storage");
      return makeTensor(s, s.dtype, args[1], args[2], args[3]);
    }
    case "torch._utils._rebuild_tensor_v2": {
      arity(fn, args, 6, 7);
      const s = storageOf(args[0], "_rebuild_tensor_v2's storage");
      expectBool(args[4], "_rebuild_tensor_v2's requires_grad");
      expectHooks(args[5], "_rebuild_tensor_v2's backward_hooks");
      expectPlainMetadata(args[6]);
      return makeTensor(s, s.dtype, args[1], args[2], args[3]);
    }
    case "torch._utils._rebuild_tensor_v3": {
      arity(fn, args, 7, 8);
      const s = storageOf(args[0], "_rebuild_tensor_v3's storage");
      expectBool(args[4], "_rebuild_tensor_v3's requires_grad");
      expectHooks(args[5], "_rebuild_tensor_v3's backward_hooks");
      const dtype = torchDtypeOf(args[6], "_rebuild_tensor_v3's dtype");
      expectPlainMetadata(args[7]);
      return makeTensor(s, dtype, args[1], args[2], args[3]);
    }
    case "torch._utils._rebuild_parameter":
    case "torch._utils._rebuild_parameter_with_state": {
      const n = fn.endsWith("_with_state") ? 4 : 3;
      arity(fn, args, n, n);
      if (!tensorOf(args[0])) throw bad(`${fn}'s data is ${describePy(args[0])}, not a tensor`);
      expectBool(args[1], `${fn}'s requires_grad`);
      expectHooks(args[2], `${fn}'s backward_hooks`);
      return args[0];
    }
    case "torch.nn.parameter.Parameter":
      return constructGlobal(fn, args);
    case "torch._tensor._rebuild_from_type_v2": {
      arity(fn, args, 4, 4);
      const [f, newType, inner] = args;
      if (f === null || typeof f !== "object" || f.type !== "global" || !TENSOR_RESULTS.has(f.name)) {
        throw bad(`_rebuild_from_type_v2's function is ${describePy(f)}, not a tensor rebuild function`);
      }
      const typeOk = newType !== null && typeof newType === "object" && newType.type === "global" &&
        (newType.name === "torch.Tensor" || newType.name === "torch.nn.parameter.Parameter");
      if (!typeOk) throw new TensorcastError("UNSUPPORTED_TYPE", `_rebuild_from_type_v2 makes ${describePy(newType)}; only torch.Tensor and Parameter are read`);
      return callGlobal(f.name, items(inner, "_rebuild_from_type_v2's arguments"));
    }
    case "collections.OrderedDict":
    case "collections.Counter":
      arity(fn, args, 0, 1);
      return newDict(fn === "collections.Counter" ? "Counter" : "OrderedDict", args[0]);
    case "torch.Size":
      arity(fn, args, 0, 1);
      return { type: "tuple", items: args.length === 0 ? [] : counts(args[0], "torch.Size's argument", MAX_DIMS) };
    case "torch.device": {
      arity(fn, args, 1, 2);
      if (typeof args[0] !== "string") throw bad(`torch.device's argument is ${describePy(args[0])}, not a str`);
      if (args.length === 2) expectCount(args[1], "torch.device's index");
      return { type: "device", name: args.length === 2 ? `${args[0]}:${String(args[1])}` : args[0] };
    }
    case "_codecs.encode":
      arity(fn, args, 1, 2);
      return { type: "bytes", bytes: encodeText(args[0], args[1] ?? "utf-8", "_codecs.encode") };
    case "builtins.bytearray": {
      arity(fn, args, 0, 2);
      if (args.length === 0) return { type: "bytes", bytes: new Uint8Array(0) };
      const a = args[0];
      if (args.length === 1 && a !== null && typeof a === "object" && a.type === "bytes") return { type: "bytes", bytes: a.bytes.slice() };
      return { type: "bytes", bytes: encodeText(a, args[1] ?? null, "bytearray") };
    }
    case "builtins.set": {
      arity(fn, args, 0, 1);
      return { type: "set", items: args.length === 0 ? [] : [...items(args[0], "set's argument")] };
    }
    case "builtins.complex": {
      arity(fn, args, 0, 2);
      const num = (v: PyValue | undefined): number => {
        if (v === undefined) return 0;
        if (typeof v === "number") return v;
        if (v !== null && typeof v === "object" && v.type === "float") return v.value;
        throw bad(`complex's argument is ${describePy(v)}, not a number`);
      };
      return { type: "complex", re: num(args[0]), im: num(args[1]) };
    }
    case "torch.serialization._get_layout":
      arity(fn, args, 1, 1);
      if (typeof args[0] !== "string") throw bad(`_get_layout's argument is ${describePy(args[0])}, not a str`);
      return { type: "layout", name: args[0] };
  }
  const rebuild = REBUILD_FUNCTIONS.find((f) => fn === `torch._utils.${f}`);
  if (rebuild) {
    const what = rebuild.includes("qtensor") ? "quantized" : rebuild.includes("sparse") ? "sparse" : rebuild.includes("nested") ? "nested"
      : rebuild.includes("meta") ? "meta (storage-less)" : rebuild.includes("wrapper") ? "tensor-subclass" : "device";
    throw new TensorcastError("UNSUPPORTED_TYPE", `${fn} rebuilds a ${what} tensor, which is not read; dense tensors are`);
  }
  if (/^torch\.(cuda\.)?(sparse\.)?[A-Za-z0-9]+Tensor$/.test(fn) || fn === "torch.Tensor") {
    throw new TensorcastError("UNSUPPORTED_TYPE", `calling ${fn} (a legacy tensor constructor) is not read; state dicts rebuild tensors with torch._utils._rebuild_tensor_v2`);
  }
  throw bad(`${fn} cannot be called`);
}

/** NEWOBJ of the allowed class `cls`. */
export function constructGlobal(cls: string, args: readonly PyValue[]): PyValue {
  switch (cls) {
    case "torch.nn.parameter.Parameter":
      arity(cls, args, 0, 2);
      if (args.length === 0 || !tensorOf(args[0])) throw new TensorcastError("UNSUPPORTED_TYPE", `a Parameter of ${args.length === 0 ? "nothing" : describePy(args[0])} is not read; a Parameter of a tensor is`);
      if (args.length === 2) expectBool(args[1], "Parameter's requires_grad");
      return args[0];
    case "collections.OrderedDict":
      return newDict("OrderedDict");
    case "collections.Counter":
      return newDict("Counter");
    case "builtins.set":
      return { type: "set", items: [] };
    case "builtins.bytearray":
      return { type: "bytes", bytes: new Uint8Array(0) };
    case "torch.Size":
      return callGlobal(cls, args);
  }
  throw new TensorcastError("UNSUPPORTED_TYPE", `NEWOBJ of ${cls} is not read`);
}

/** The hooks for readPickle, with the container's persistent load. */
export function rebuildHooks(persistentLoad: (pid: readonly PyValue[]) => StorageRef): PickleHooks {
  return {
    persistentLoad: (pid) => ({ type: "persistent", value: persistentLoad(pid) }),
    call: callGlobal,
    construct: constructGlobal,
  };
}
