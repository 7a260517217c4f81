/**
 * A PyTorch checkpoint (`torch.save`), read without running any of it:
 *
 * - the zip format (torch >= 1.6): `PREFIX/data.pkl` (the pickle), `PREFIX/data/KEY` (each
 *   storage's bytes), `PREFIX/byteorder` ("little" or "big"; absent means little, as torch.load's
 *   default), `.format_version`, `.storage_alignment`, `version`;
 * - the legacy format (`_use_new_zipfile_serialization=False`, torch < 1.6): pickles in a row (the
 *   magic number 0x1950a86a20f9469cfc6c, the protocol version 1001, sys_info, the object, the list
 *   of storage keys), then each storage in that order as a little-endian int64 element count and
 *   its bytes, always little-endian (torch's writer swaps on a big-endian machine).
 *
 * The pickle is read by pickle.ts (only what weights_only accepts) and the tensors by rebuild.ts;
 * this file resolves storages to byte ranges of the file and checks each one lies in it. The
 * older tar format (torch < 0.4) is refused, as torch.load(weights_only=True) refuses it.
 */
import { TensorcastError } from "../../errors.js";
import { dtype as dtypeOf, type DType } from "../../dtype/table.js";
import { PickleNeedsMore, readPickle, typeName, type PyValue } from "./pickle.js";
import { describePy, expectCount, rebuildHooks, storageTypeDtype, tensorOf, torchItemSize, type PtTensor, type StorageRef } from "./rebuild.js";
import { TORCH_DTYPES } from "./allowed-globals.js";
import { decodeUtf8 } from "../onnx/wire.js";
import { crc32, isZip, readZipDirectory, type ByteSource } from "./zip.js";

/** The torch dtypes read, for the message refusing another. */
const READ_TYPES = Object.entries(TORCH_DTYPES).filter(([, v]) => v.to).map(([k]) => k).join(", ");

/** A pickle (data.pkl, or a legacy file's pickles) larger than this is refused. */
export const MAX_PICKLE_BYTES = 256 * 1024 * 1024;

/** A storage's bytes: a range of the file. */
export interface StorageRange {
  readonly offset: number;
  readonly bytes: number;
}

export interface PytorchCheckpoint {
  readonly container: "zip" | "legacy";
  /** What the pickle holds: a state dict, a dict of them, a tensor, ... */
  readonly root: PyValue;
  /** Storage key -> where its bytes lie in the file; a storage the pickle names but no data has is absent. */
  readonly storages: ReadonlyMap<string, StorageRange>;
  /** The zip's byteorder record said "big": every element's bytes are to be swapped. */
  readonly bigEndian: boolean;
}

const bad = (file: string, message: string): TensorcastError => new TensorcastError("INVALID_DATA", `${file}: ${message}`);

const LEGACY_MAGIC = 0x1950a86a20f9469cfc6cn;

/** Whether the first bytes are a torch.save file's: a zip, or a pickle (the legacy format). */
export function isPytorchCheckpoint(first: Uint8Array): boolean {
  return isZip(first) || (first.length >= 2 && first[0] === 0x80 && first[1] >= 2 && first[1] <= 5);
}

/**
 * Reads the container and the pickle of the checkpoint in `src` (nothing of the tensors' data).
 * @throws TensorcastError INVALID_DATA naming `file` and what is wrong; UNSUPPORTED_TYPE for what
 *         torch allows but tensorcast does not read (quantized, sparse tensors, ...).
 */
export async function readPytorchCheckpoint(src: ByteSource, file: string): Promise<PytorchCheckpoint> {
  const first = await src.read(0, Math.min(src.size, 512));
  if (isZip(first)) return readZipCheckpoint(src, file);
  if (first.length >= 262 && String.fromCharCode(...first.subarray(257, 262)) === "ustar") {
    throw bad(file, "is a tar archive: the format of torch < 0.4, which torch.load(weights_only=True) refuses too; load it with an old torch and save it again");
  }
  if (first.length >= 2 && first[0] === 0x80) return readLegacyCheckpoint(src, file);
  throw bad(file, "is not a PyTorch checkpoint: neither a zip (torch.save since 1.6) nor a pickle (the legacy format)");
}

async function readZipCheckpoint(src: ByteSource, file: string): Promise<PytorchCheckpoint> {
  const entries = await readZipDirectory(src, file);
  if (entries.length === 0) throw bad(file, "zip: has no entries; a torch.save archive holds PREFIX/data.pkl");
  // torch's reader takes the folder of the first entry as the archive's name.
  const slash = entries[0].name.indexOf("/");
  if (slash <= 0) throw bad(file, `zip: its first entry ${JSON.stringify(entries[0].name.slice(0, 200))} is not in a folder, as torch.save's entries are`);
  const prefix = entries[0].name.slice(0, slash + 1);
  const byName = new Map(entries.map((e) => [e.name, e]));
  const record = (name: string) => byName.get(prefix + name);
  if (record("constants.pkl")) throw bad(file, "is a TorchScript archive (it has constants.pkl), which torch.load(weights_only=True) refuses; it is not a state dict");
  const pkl = record("data.pkl");
  if (!pkl) throw bad(file, `zip: has no ${prefix}data.pkl; it is not a torch.save archive`);
  if (pkl.size > MAX_PICKLE_BYTES) throw bad(file, `${prefix}data.pkl is ${pkl.size} bytes, over the ${MAX_PICKLE_BYTES}-byte limit`);
  const readRecord = async (name: string, e: { offset: number; size: number; crc32: number }): Promise<Uint8Array> => {
    const bytes = await src.read(e.offset, e.size);
    if (crc32(bytes) !== e.crc32) throw bad(file, `zip: ${name}'s bytes do not match their CRC-32`);
    return bytes;
  };
  let bigEndian = false;
  const order = record("byteorder");
  if (order) {
    if (order.size > 16) throw bad(file, `${prefix}byteorder is ${order.size} bytes; it holds "little" or "big"`);
    const text = decodeUtf8(await readRecord(`${prefix}byteorder`, order), `${file}: ${prefix}byteorder`);
    if (text !== "little" && text !== "big") throw bad(file, `${prefix}byteorder is ${JSON.stringify(text)}; it must be "little" or "big"`);
    bigEndian = text === "big";
  }
  const pickle = await readRecord(`${prefix}data.pkl`, pkl);
  const storages = new Map<string, StorageRange>();
  const loaded = new Map<string, StorageRef>();
  const hooks = rebuildHooks((pid) => {
    if (pid.length !== 5) throw new TensorcastError("INVALID_DATA", `a persistent id has ${pid.length} items; torch.save's are ("storage", type, key, location, size)`);
    const [, type, key, location, numelV] = pid;
    const storageDtype = storageTypeDtype(type);
    if (typeof key !== "string") throw new TensorcastError("INVALID_DATA", `a storage's key is ${describePy(key)}, not a str`);
    if (typeof location !== "string") throw new TensorcastError("INVALID_DATA", `storage ${JSON.stringify(key.slice(0, 100))}'s location is ${describePy(location)}, not a str`);
    const numel = expectCount(numelV, `storage ${JSON.stringify(key.slice(0, 100))}'s size`);
    // torch.load keeps the first storage of a key (loaded_storages); a later id of the key gets it.
    const known = loaded.get(key);
    if (known) return known;
    const bytes = numel * torchItemSize(storageDtype);
    const e = record(`data/${key}`);
    if (!e) throw new TensorcastError("INVALID_DATA", `storage ${JSON.stringify(key.slice(0, 100))} has no record ${prefix}data/${key.slice(0, 100)}`);
    if (e.size !== bytes) throw new TensorcastError("INVALID_DATA", `storage ${JSON.stringify(key.slice(0, 100))} is ${numel} ${storageDtype} elements (${bytes} bytes) but its record holds ${e.size} bytes`);
    storages.set(key, { offset: e.offset, bytes });
    const ref: StorageRef = { key, dtype: storageDtype, start: 0, bytes };
    loaded.set(key, ref);
    return ref;
  });
  const { value } = readPickle(pickle, `${file}: ${prefix}data.pkl`, hooks);
  return { container: "zip", root: value, storages, bigEndian };
}

/**
 * The pickles of a legacy file, read from a prefix of the file that grows (doubling, up to
 * MAX_PICKLE_BYTES) until they fit: their length is only known once they are read.
 */
async function readLegacyCheckpoint(src: ByteSource, file: string): Promise<PytorchCheckpoint> {
  for (let length = Math.min(src.size, 1 << 20); ; length = Math.min(src.size, length * 2)) {
    const bytes = await src.read(0, length);
    try {
      return await legacyFrom(bytes, src, file, length < src.size);
    } catch (e) {
      if (!(e instanceof PickleNeedsMore)) throw e;
      if (length >= MAX_PICKLE_BYTES) throw bad(file, `its pickles run past ${MAX_PICKLE_BYTES} bytes, the limit`);
    }
  }
}

async function legacyFrom(bytes: Uint8Array, src: ByteSource, file: string, more: boolean): Promise<PytorchCheckpoint> {
  const plain = rebuildHooks(() => {
    throw new TensorcastError("INVALID_DATA", "a persistent id outside the checkpoint's object pickle");
  });
  const magic = readPickle(bytes, `${file}: the magic number`, plain, 0, more);
  if (magic.value !== LEGACY_MAGIC) {
    throw bad(file, `starts with the pickle of ${describePy(magic.value)}, not torch's magic number 0x1950a86a20f9469cfc6c (it is not a PyTorch checkpoint)`);
  }
  const protocol = readPickle(bytes, `${file}: the protocol version`, plain, magic.end, more);
  if (protocol.value !== 1001) throw bad(file, `has the protocol version ${describePy(protocol.value)}; torch's legacy format is 1001`);
  const sysInfo = readPickle(bytes, `${file}: sys_info`, plain, protocol.end, more);
  const info = sysInfo.value;
  if (info === null || typeof info !== "object" || info.type !== "dict") throw bad(file, `its sys_info is ${typeName(info)}, not a dict`);

  // Root storages by key (the first id of a key decides, as torch's deserialized_objects), views by theirs.
  const roots = new Map<string, StorageRef>();
  const views = new Map<string, StorageRef>();
  const hooks = rebuildHooks((pid) => {
    if (pid.length !== 6) throw new TensorcastError("INVALID_DATA", `a persistent id has ${pid.length} items; the legacy format's are ("storage", type, key, location, size, view)`);
    const [, type, keyV, location, numelV, view] = pid;
    // torch's legacy loader reads storage_type.dtype, which UntypedStorage (the storage of the
    // types added since, float8 and uint16 among them) does not have: it fails to load them.
    if (type !== null && typeof type === "object" && type.type === "global" && type.name === "torch.storage.UntypedStorage") {
      throw new TensorcastError("INVALID_DATA", "an UntypedStorage in the legacy format, which torch.load cannot read either (save the checkpoint in the zip format)");
    }
    const storageDtype = storageTypeDtype(type);
    const key = storageKey(keyV);
    if (typeof location !== "string") throw new TensorcastError("INVALID_DATA", `storage ${key}'s location is ${describePy(location)}, not a str`);
    const numel = expectCount(numelV, `storage ${key}'s size`);
    const item = torchItemSize(storageDtype);
    let root = roots.get(key);
    if (!root) {
      root = { key, dtype: storageDtype, start: 0, bytes: numel * item };
      if (!Number.isSafeInteger(root.bytes)) throw new TensorcastError("INVALID_DATA", `storage ${key} of ${numel} elements is past 2^53 bytes`);
      roots.set(key, root);
    }
    if (view === null) return root;
    if (view === undefined || typeof view !== "object" || view.type !== "tuple" || view.items.length !== 3) {
      throw new TensorcastError("INVALID_DATA", `storage ${key}'s view is ${describePy(view ?? null)}, not None or (key, offset, size)`);
    }
    const viewKey = storageKey(view.items[0]);
    const known = views.get(viewKey);
    if (known) return known;
    const start = expectCount(view.items[1], `storage view ${viewKey}'s offset`) * item;
    const length = expectCount(view.items[2], `storage view ${viewKey}'s size`) * item;
    if (start + length > root.bytes) {
      throw new TensorcastError("INVALID_DATA", `storage view ${viewKey} is bytes [${start}, ${start + length}) of storage ${key}, which has ${root.bytes}`);
    }
    const ref: StorageRef = { key, dtype: storageDtype, start, bytes: length };
    views.set(viewKey, ref);
    return ref;
  });
  const object = readPickle(bytes, `${file}: the object pickle`, hooks, sysInfo.end, more);
  const keysPickle = readPickle(bytes, `${file}: the storage keys`, plain, object.end, more);
  const keys = keysPickle.value;
  if (keys === null || typeof keys !== "object" || keys.type !== "list") throw bad(file, `its list of storage keys is ${typeName(keys)}, not a list`);
  const storages = new Map<string, StorageRange>();
  let at = keysPickle.end;
  for (const k of keys.items) {
    const key = storageKey(k);
    const root = roots.get(key);
    if (!root) throw bad(file, `its list of storage keys names ${key}, which no tensor's storage has`);
    if (storages.has(key)) throw bad(file, `its list of storage keys names ${key} twice`);
    const item = torchItemSize(root.dtype);
    if (at + 8 > src.size) throw bad(file, `is truncated: storage ${key}'s size at byte ${at} is past its end (${src.size} bytes)`);
    const head = await src.read(at, 8);
    const numel = new DataView(head.buffer, head.byteOffset, 8).getBigInt64(0, true);
    if (numel !== BigInt(root.bytes / item)) {
      throw bad(file, `storage ${key} at byte ${at} holds ${numel} elements, but its tensors' storage has ${root.bytes / item}`);
    }
    if (at + 8 + root.bytes > src.size) throw bad(file, `is truncated: storage ${key}'s bytes [${at + 8}, ${at + 8 + root.bytes}) run past its end (${src.size} bytes)`);
    storages.set(key, { offset: at + 8, bytes: root.bytes });
    at += 8 + root.bytes;
  }
  return { container: "legacy", root: object.value, storages, bigEndian: false };
}

/** A legacy storage key: torch writes str(cdata), a str; a number is taken as its text, as Python's int(saved_id). */
function storageKey(v: PyValue): string {
  if (typeof v === "string" && v.length <= 100) return v;
  if (typeof v === "number" && Number.isSafeInteger(v)) return String(v);
  throw new TensorcastError("INVALID_DATA", `a storage key is ${describePy(v)}, not a short str`);
}

/** One tensor of a state dict, with the tensorcast type and the file range of its storage. */
export interface StateDictTensor {
  readonly name: string;
  readonly tensor: PtTensor;
  readonly dtype: DType;
  /** Where the storage the tensor views starts in the file (its view's start included). */
  readonly storageOffset: number;
}

/** How a value is described in the list of a dict's keys: "a state dict of 12 tensors", "an int". */
function whatIs(v: PyValue): string {
  if (tensorOf(v)) return "a tensor";
  if (v !== null && typeof v === "object" && v.type === "dict") {
    let tensors = 0;
    for (const [, x] of v.entries.values()) if (tensorOf(x)) tensors++;
    return tensors === v.entries.size && tensors > 0 ? `a state dict of ${tensors} tensors` : `${describePy(v)} entries, ${tensors} of them tensors`;
  }
  return describePy(v);
}

function keyList(d: Extract<PyValue, { type: "dict" }>): string {
  const shown = [...d.entries.values()].slice(0, 20).map(([k, v]) => `${describePy(k)} (${whatIs(v)})`);
  return `${shown.join(", ")}${d.entries.size > 20 ? `, and ${d.entries.size - 20} more` : ""}`;
}

/**
 * The tensors of the checkpoint's state dict: its top-level object when that is a dict of tensors
 * (or a tensor: one named `single`), else the entry `key` of the top-level dict.
 * @example stateDictOf(cp, "model.pt", "m")  // [{ name: "fc.weight", ... }, ...]
 * @throws TensorcastError INVALID_ATTRIBUTE for a missing or needed `key`, listing the keys there are;
 *         UNSUPPORTED_TYPE for a tensor of a type not read (complex, quantized), naming it;
 *         INVALID_DATA for a tensor whose storage has no data.
 */
export function stateDictOf(cp: PytorchCheckpoint, file: string, single: string, key?: string): StateDictTensor[] {
  let value = cp.root;
  let where = "its top-level object";
  if (key !== undefined) {
    if (value === null || typeof value !== "object" || value.type !== "dict") {
      throw new TensorcastError("INVALID_ATTRIBUTE", `${file}: --key ${JSON.stringify(key)} picks an entry of a dict, but the checkpoint holds ${whatIs(value)}`);
    }
    const entry = value.entries.get(`s${key}`);
    if (!entry) throw new TensorcastError("INVALID_ATTRIBUTE", `${file}: has no key ${JSON.stringify(key)}; its keys are ${keyList(value)}`);
    value = entry[1];
    where = `its entry ${JSON.stringify(key)}`;
  }
  const entries: [PyValue, PyValue][] = [];
  if (tensorOf(value)) entries.push([single, value]);
  else if (value !== null && typeof value === "object" && value.type === "dict") {
    for (const [k, v] of value.entries.values()) entries.push([k, v]);
    const notTensors = entries.filter(([, v]) => !tensorOf(v));
    if (notTensors.length > 0) {
      const hint = key === undefined ? "; pass --key K to read the state dict under one of them" : "";
      throw new TensorcastError("INVALID_ATTRIBUTE", `${file}: ${where} is not a state dict (a dict of tensors): its keys are ${keyList(value)}${hint}`);
    }
  } else {
    throw new TensorcastError("INVALID_ATTRIBUTE", `${file}: ${where} is ${whatIs(value)}, not a state dict (a dict of tensors)`);
  }
  return entries.map(([k, v]) => {
    if (typeof k !== "string") throw new TensorcastError("UNSUPPORTED_TYPE", `${file}: a tensor's key is ${describePy(k)}; state dict names are str`);
    const t = tensorOf(v) as PtTensor;
    const known = TORCH_DTYPES[t.dtype];
    if (!known?.to) throw new TensorcastError("UNSUPPORTED_TYPE", `${file}: tensor ${JSON.stringify(k)}: torch.${t.dtype}: ${known?.why ?? "not read"}; the types read are ${READ_TYPES}`);
    const range = cp.storages.get(t.storage.key);
    if (!range) throw new TensorcastError("INVALID_DATA", `${file}: tensor ${JSON.stringify(k)}: its storage ${JSON.stringify(t.storage.key)} has no data in the file`);
    return { name: k, tensor: t, dtype: dtypeOf(known.to), storageOffset: range.offset + t.storage.start };
  });
}

/**
 * The tensors to keep when writing a format that cannot alias (safetensors): of tensors that are
 * the same view (same storage bytes, offset, shape, strides and type), the first in the state
 * dict's order; the names dropped are listed under the name kept. Views that overlap without
 * being equal (a fused weight and its slices) are each written as their own copy, as transformers'
 * save_pretrained clones disjoint views.
 * @example dedupeTied(tensors).dropped  // Map { "model.embed_tokens.weight" => ["lm_head.weight"] }
 */
export function dedupeTied(tensors: readonly StateDictTensor[]): { kept: StateDictTensor[]; dropped: Map<string, string[]> } {
  const seen = new Map<string, StateDictTensor>();
  const kept: StateDictTensor[] = [];
  const dropped = new Map<string, string[]>();
  for (const t of tensors) {
    const v = t.tensor;
    const id = JSON.stringify([t.storageOffset, v.storage.key, v.dtype, v.offset, v.shape, v.stride]);
    const first = seen.get(id);
    if (first && v.shape.every((d) => d > 0)) {
      const list = dropped.get(first.name) ?? [];
      list.push(t.name);
      dropped.set(first.name, list);
      continue;
    }
    seen.set(id, t);
    kept.push(t);
  }
  return { kept, dropped };
}
