/**
 * A pickle reader that runs no code: it interprets exactly the opcodes and globals that PyTorch's
 * `torch.load(weights_only=True)` unpickler (torch/_weights_only_unpickler.py) accepts, and builds
 * plain values from them. Nothing named by a pickle is ever looked up or called: a GLOBAL is a
 * name checked against the allow-list (allowed-globals.ts), and REDUCE / NEWOBJ / BUILD apply only
 * the handful of constructors a state dict needs (rebuild.ts), each reimplemented here.
 *
 * The opcodes are protocol 2's subset that weights_only takes: PROTO, STOP, MARK, the tuples,
 * NONE / NEWTRUE / NEWFALSE, BININT / BININT1 / BININT2 / LONG1, BINFLOAT, BINUNICODE,
 * SHORT_BINSTRING, EMPTY_TUPLE / LIST / DICT / SET, APPEND(S), SETITEM(S), BINGET / LONG_BINGET,
 * BINPUT / LONG_BINPUT, GLOBAL, REDUCE, NEWOBJ, BUILD, BINPERSID. Anything else (protocol 4's
 * FRAME and STACK_GLOBAL, INST, OBJ, EXT, BINBYTES, ...) is INVALID_DATA, as torch refuses it.
 *
 * Memory stays proportional to the pickle: every opcode makes at most one new value (MARK-based
 * ones move the values already made), BINGET pushes a reference, never a copy, and the memo is a
 * Map, so a BINPUT at index 2^32 - 1 costs one entry. Strings are bounded by the bytes left.
 */
import { TensorcastError } from "../../errors.js";
import { globalAllowed } from "./allowed-globals.js";
import { decodeUtf8 } from "../onnx/wire.js";

/** A Python value as the pickle builds it. Integers that fit are numbers, larger ones bigints. */
export type PyValue = null | boolean | number | bigint | string | PyObject;

export type PyObject =
  | { readonly type: "float"; readonly value: number }
  | { readonly type: "complex"; readonly re: number; readonly im: number }
  | { readonly type: "bytes"; readonly bytes: Uint8Array }
  | { readonly type: "list"; readonly items: PyValue[] }
  | { readonly type: "tuple"; readonly items: readonly PyValue[] }
  | PyDict
  | { readonly type: "set"; readonly items: PyValue[] }
  /** An allowed global (a class, function, dtype or storage type), by its full name. */
  | { readonly type: "global"; readonly name: string }
  | { readonly type: "device"; readonly name: string }
  | { readonly type: "layout"; readonly name: string }
  /** What a persistent id stands for: given by the container (zip or legacy). */
  | { readonly type: "persistent"; readonly value: unknown }
  /** What a rebuild function made: given by rebuild.ts. */
  | { readonly type: "tensor"; readonly value: unknown };

/** dict, collections.OrderedDict or collections.Counter: entries in insertion order. */
export interface PyDict {
  readonly type: "dict";
  readonly kind: "dict" | "OrderedDict" | "Counter";
  /** Canonical key (see `keyOf`) -> [key, value]; a Map keeps Python's insertion order. */
  readonly entries: Map<string, [PyValue, PyValue]>;
}

/** What the reader does with the few opcodes that touch the world outside plain values. */
export interface PickleHooks {
  /** BINPERSID: the persistent id (a tuple whose first item is "storage"), to what it stands for. */
  persistentLoad(pid: readonly PyValue[]): PyValue;
  /** REDUCE of an allowed global `fn` with `args`. */
  call(fn: string, args: readonly PyValue[]): PyValue;
  /** NEWOBJ of an allowed class `cls` with `args`. */
  construct(cls: string, args: readonly PyValue[]): PyValue;
}

export const MAX_PICKLE_DEPTH = 1000;
/**
 * Opcodes one pickle may run (each makes at most one value or memo entry). A state dict runs
 * about 30 per tensor, so this is some 250,000 tensors; a hostile pickle of millions of
 * EMPTY_LISTs stops here, at a few hundred MB of JavaScript objects rather than gigabytes.
 */
export const MAX_PICKLE_OPS = 8_000_000;

/** Thrown (instead of INVALID_DATA) when `bytes` ends first and the caller said more may follow. */
export class PickleNeedsMore extends Error {}

/** INVALID_DATA about a pickle: `what` names the pickle (e.g. "model.bin: data.pkl"), `at` the opcode's byte. */
export function pickleError(what: string, at: number, message: string): TensorcastError {
  return new TensorcastError("INVALID_DATA", `${what}: pickle byte ${at}: ${message}`);
}

/** The type of a value, as Python would name it, for messages. */
export function typeName(v: PyValue): string {
  if (v === null) return "None";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "number" || typeof v === "bigint") return "int";
  if (typeof v === "string") return "str";
  if (v.type === "dict") return v.kind;
  if (v.type === "global") return `the global ${v.name}`;
  if (v.type === "persistent") return "a storage";
  return v.type;
}

/**
 * The canonical key of a hashable value, so that equal Python keys meet in one entry: True, 1 and
 * 1.0 are one key in Python, "1" another. Lists, dicts and sets are unhashable (TypeError in
 * Python); tensors and storages hash by identity in Python, which a reader of state dicts never
 * needs, so they are refused too.
 */
export function keyOf(k: PyValue): string | undefined {
  if (k === null) return "None";
  if (typeof k === "string") return `s${k}`;
  if (typeof k === "boolean") return `n${k ? 1 : 0}`;
  if (typeof k === "number") return `n${Object.is(k, -0) ? 0 : k}`;
  if (typeof k === "bigint") return `n${k}`;
  if (k.type === "float") return Number.isInteger(k.value) && Number.isSafeInteger(k.value) ? `n${k.value === 0 ? 0 : k.value}` : `f${k.value}`;
  if (k.type === "bytes") return `b${Array.from(k.bytes).join(",")}`;
  if (k.type === "global") return `g${k.name}`;
  if (k.type === "tuple") {
    const parts: string[] = [];
    for (const item of k.items) {
      const p = keyOf(item);
      if (p === undefined) return undefined;
      parts.push(JSON.stringify(p));
    }
    return `t[${parts.join(",")}]`;
  }
  return undefined;
}

const OP = {
  MARK: 0x28, STOP: 0x2e, BININT: 0x4a, BININT1: 0x4b, BININT2: 0x4d, NONE: 0x4e, BINPERSID: 0x51,
  REDUCE: 0x52, SHORT_BINSTRING: 0x55, BINUNICODE: 0x58, APPEND: 0x61, BUILD: 0x62, GLOBAL: 0x63,
  APPENDS: 0x65, BINGET: 0x68, LONG_BINGET: 0x6a, EMPTY_LIST: 0x5d, BINPUT: 0x71, LONG_BINPUT: 0x72,
  SETITEM: 0x73, TUPLE: 0x74, SETITEMS: 0x75, EMPTY_DICT: 0x7d, EMPTY_TUPLE: 0x29, BINFLOAT: 0x47,
  PROTO: 0x80, NEWOBJ: 0x81, TUPLE1: 0x85, TUPLE2: 0x86, TUPLE3: 0x87, NEWTRUE: 0x88, NEWFALSE: 0x89,
  LONG1: 0x8a, EMPTY_SET: 0x8f,
} as const;

/** Opcode names for the refusal of the ones weights_only does not take. */
const OTHER_OPS: Record<number, string> = {
  0x8c: "SHORT_BINUNICODE", 0x8d: "BINUNICODE8", 0x8e: "BINBYTES8", 0x90: "ADDITEMS", 0x91: "FROZENSET",
  0x92: "NEWOBJ_EX", 0x93: "STACK_GLOBAL", 0x94: "MEMOIZE", 0x95: "FRAME", 0x96: "BYTEARRAY8",
  0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER", 0x42: "BINBYTES", 0x43: "SHORT_BINBYTES", 0x69: "INST",
  0x6f: "OBJ", 0x82: "EXT1", 0x83: "EXT2", 0x84: "EXT4", 0x8b: "LONG4", 0x49: "INT", 0x4c: "LONG",
  0x46: "FLOAT", 0x53: "STRING", 0x54: "BINSTRING", 0x56: "UNICODE", 0x50: "PERSID", 0x67: "GET",
  0x70: "PUT", 0x30: "POP", 0x31: "POP_MARK", 0x32: "DUP", 0x6c: "LIST", 0x64: "DICT",
};

/**
 * Python 2 module names that pickle's compatibility mapping (and torch's copy of it) renames
 * before the allow-list is consulted; the rest of _compat_pickle's table names modules the
 * allow-list never contains, so mapping them changes no verdict.
 */
const IMPORT_MAPPING: Readonly<Record<string, string>> = { __builtin__: "builtins", copy_reg: "copyreg", UserDict: "collections" };

/**
 * Runs the pickle in `bytes` from `start` to its STOP and returns its value and the byte after
 * STOP (a legacy checkpoint is several pickles in a row).
 * @throws TensorcastError INVALID_DATA naming `what`, the byte and the opcode or global refused;
 *         what the hooks throw.
 */
export function readPickle(bytes: Uint8Array, what: string, hooks: PickleHooks, start = 0, more = false): { value: PyValue; end: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let stack: PyValue[] = [];
  const marks: PyValue[][] = [];
  const memo = new Map<number, PyValue>();
  let p = start;
  let at = start;
  const fail = (message: string): never => {
    throw pickleError(what, at, message);
  };
  let made = 0;
  const count = (): void => {
    if (++made > MAX_PICKLE_OPS) fail(`the pickle runs more than ${MAX_PICKLE_OPS} opcodes`);
  };
  const need = (n: number): number => {
    if (p + n > bytes.length && more) throw new PickleNeedsMore();
    if (p + n > bytes.length) fail(`the pickle ends inside an opcode (${n} more bytes needed, ${bytes.length - p} left)`);
    const q = p;
    p += n;
    return q;
  };
  const pop = (): PyValue => {
    if (stack.length === 0) fail("an opcode pops from an empty stack");
    return stack.pop() as PyValue;
  };
  const top = (): PyValue => {
    if (stack.length === 0) fail("an opcode reads an empty stack");
    return stack[stack.length - 1];
  };
  const popMark = (): PyValue[] => {
    const items = stack;
    const outer = marks.pop();
    if (outer === undefined) fail("an opcode pops to a MARK that was never set");
    stack = outer as PyValue[];
    return items;
  };
  const line = (): string => {
    const end = bytes.indexOf(0x0a, p);
    if (end < 0 && more) throw new PickleNeedsMore();
    if (end < 0) fail("a GLOBAL's name does not end in a newline");
    const text = decodeUtf8(bytes.subarray(p, end), `${what}: pickle byte ${at}: a GLOBAL's name`);
    p = end + 1;
    return text;
  };
  const setItem = (target: PyValue, k: PyValue, v: PyValue, op: string): void => {
    if (target === null || typeof target !== "object" || target.type !== "dict") {
      fail(`${op} targets ${typeName(target)}; it can only set items of a dict, collections.OrderedDict or collections.Counter`);
    }
    const key = keyOf(k);
    if (key === undefined) fail(`${op} uses ${typeName(k)} as a dict key, which is not hashable here`);
    const entries = (target as PyDict).entries;
    const old = entries.get(key as string);
    // Python keeps the first key object and its position, and replaces the value.
    entries.set(key as string, [old ? old[0] : k, v]);
  };

  for (;;) {
    at = p;
    if (p >= bytes.length && more) throw new PickleNeedsMore();
    if (p >= bytes.length) fail("the pickle ends without a STOP opcode");
    const op = bytes[p++];
    count();
    switch (op) {
      case OP.PROTO:
        need(1);
        break;
      case OP.STOP:
        if (marks.length > 0) fail("STOP inside an unclosed MARK");
        return { value: pop(), end: p };
      case OP.MARK:
        if (marks.length >= MAX_PICKLE_DEPTH) fail(`MARKs nest more than ${MAX_PICKLE_DEPTH} deep`);
        marks.push(stack);
        stack = [];
        break;
      case OP.TUPLE: {
        // popMark first: it replaces `stack`, which `stack.push(...)` would otherwise read before.
        const items = popMark();
        stack.push({ type: "tuple", items });
        break;
      }
      case OP.TUPLE1: {
        const a = pop();
        stack.push({ type: "tuple", items: [a] });
        break;
      }
      case OP.TUPLE2: {
        const b = pop();
        const a = pop();
        stack.push({ type: "tuple", items: [a, b] });
        break;
      }
      case OP.TUPLE3: {
        const c = pop();
        const b = pop();
        const a = pop();
        stack.push({ type: "tuple", items: [a, b, c] });
        break;
      }
      case OP.NONE:
        stack.push(null);
        break;
      case OP.NEWTRUE:
        stack.push(true);
        break;
      case OP.NEWFALSE:
        stack.push(false);
        break;
      case OP.EMPTY_TUPLE:
        stack.push({ type: "tuple", items: [] });
        break;
      case OP.EMPTY_LIST:
        stack.push({ type: "list", items: [] });
        break;
      case OP.EMPTY_DICT:
        stack.push({ type: "dict", kind: "dict", entries: new Map() });
        break;
      case OP.EMPTY_SET:
        stack.push({ type: "set", items: [] });
        break;
      case OP.BININT:
        stack.push(view.getInt32(need(4), true));
        break;
      case OP.BININT1:
        stack.push(bytes[need(1)]);
        break;
      case OP.BININT2:
        stack.push(view.getUint16(need(2), true));
        break;
      case OP.LONG1: {
        const n = bytes[need(1)];
        const q = need(n);
        stack.push(decodeLong(bytes.subarray(q, q + n)));
        break;
      }
      case OP.BINFLOAT:
        stack.push({ type: "float", value: view.getFloat64(need(8), false) });
        break;
      case OP.BINUNICODE: {
        const n = view.getUint32(need(4), true);
        const q = need(n);
        stack.push(decodeUtf8(bytes.subarray(q, q + n), `${what}: pickle byte ${at}: a string`));
        break;
      }
      case OP.SHORT_BINSTRING: {
        // torch.load's encoding is utf-8: a Python 2 str becomes a str.
        const n = bytes[need(1)];
        const q = need(n);
        stack.push(decodeUtf8(bytes.subarray(q, q + n), `${what}: pickle byte ${at}: a string`));
        break;
      }
      case OP.APPEND: {
        const item = pop();
        const list = top();
        if (list === null || typeof list !== "object" || list.type !== "list") fail(`APPEND to ${typeName(list)}; it can only append to a list`);
        (list as { items: PyValue[] }).items.push(item);
        break;
      }
      case OP.APPENDS: {
        const items = popMark();
        const list = top();
        if (list === null || typeof list !== "object" || list.type !== "list") fail(`APPENDS to ${typeName(list)}; it can only extend a list`);
        const into = (list as { items: PyValue[] }).items;
        for (const item of items) into.push(item);
        break;
      }
      case OP.SETITEM: {
        const v = pop();
        const k = pop();
        setItem(top(), k, v, "SETITEM");
        break;
      }
      case OP.SETITEMS: {
        const items = popMark();
        const target = top();
        if (items.length % 2 !== 0) fail(`SETITEMS with an odd number of items (${items.length}): a key without a value`);
        for (let i = 0; i < items.length; i += 2) setItem(target, items[i], items[i + 1], "SETITEMS");
        break;
      }
      case OP.BINGET:
      case OP.LONG_BINGET: {
        const i = op === OP.BINGET ? bytes[need(1)] : view.getUint32(need(4), true);
        if (!memo.has(i)) fail(`${op === OP.BINGET ? "BINGET" : "LONG_BINGET"} ${i} refers to a memo entry that was never stored`);
        stack.push(memo.get(i) as PyValue);
        break;
      }
      case OP.BINPUT:
      case OP.LONG_BINPUT: {
        const i = op === OP.BINPUT ? bytes[need(1)] : view.getUint32(need(4), true);
        memo.set(i, top());
        break;
      }
      case OP.GLOBAL: {
        let module = line();
        const name = line();
        module = IMPORT_MAPPING[module] ?? module;
        const full = `${module}.${name}`;
        const why = globalAllowed(module, full);
        if (why !== undefined) fail(`GLOBAL ${JSON.stringify(full.slice(0, 200))} ${why}; nothing was executed`);
        stack.push({ type: "global", name: full });
        break;
      }
      case OP.REDUCE: {
        const args = pop();
        const fn = top();
        if (fn === null || typeof fn !== "object" || fn.type !== "global") fail(`REDUCE calls ${typeName(fn)}; only allowed globals can be called`);
        if (args === null || typeof args !== "object" || args.type !== "tuple") fail(`REDUCE's arguments are ${typeName(args)}, not a tuple`);
        stack[stack.length - 1] = withAt(() => hooks.call((fn as { name: string }).name, (args as { items: PyValue[] }).items), what, at);
        break;
      }
      case OP.NEWOBJ: {
        const args = pop();
        const cls = pop();
        if (cls === null || typeof cls !== "object" || cls.type !== "global") fail(`NEWOBJ of ${typeName(cls)}; only allowed classes can be made`);
        if (args === null || typeof args !== "object" || args.type !== "tuple") fail(`NEWOBJ's arguments are ${typeName(args)}, not a tuple`);
        stack.push(withAt(() => hooks.construct((cls as { name: string }).name, (args as { items: PyValue[] }).items), what, at));
        break;
      }
      case OP.BUILD: {
        const state = pop();
        const inst = top();
        // OrderedDict and Counter take attributes (a state dict's `_metadata`), which a reader of
        // tensors does not need; torch would set them. Tensors' legacy set_ state and anything
        // else is refused, as torch refuses what is not a Tensor, Parameter or allowed class.
        const ok = inst !== null && typeof inst === "object" && inst.type === "dict" && inst.kind !== "dict";
        if (!ok) fail(`BUILD of ${typeName(inst)} with ${typeName(state)}; only an OrderedDict's or Counter's attributes can be set`);
        break;
      }
      case OP.BINPERSID: {
        const pid = pop();
        if (pid === null || typeof pid !== "object" || pid.type !== "tuple") {
          fail(`BINPERSID's id is ${typeName(pid)}; a persistent id must be a tuple ("storage", ...)`);
        }
        const items = (pid as { items: readonly PyValue[] }).items;
        if (items.length === 0 || items[0] !== "storage") fail(`BINPERSID's id starts with ${items.length === 0 ? "nothing" : typeName(items[0])}; only persistent loads of "storage" are allowed`);
        stack.push(withAt(() => hooks.persistentLoad(items), what, at));
        break;
      }
      default: {
        const name = OTHER_OPS[op];
        fail(`opcode ${name ?? `0x${op.toString(16).padStart(2, "0")}`} is not one torch.load(weights_only=True) accepts${name ? "" : " (not a pickle opcode)"}`);
      }
    }
  }
}

/** Runs `f`, giving a TensorcastError without a position the pickle's name and byte. */
function withAt<T>(f: () => T, what: string, at: number): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof TensorcastError && !e.message.startsWith(what)) {
      throw new TensorcastError(e.code, `${what}: pickle byte ${at}: ${e.message}`);
    }
    throw e;
  }
}

/** LONG1's little-endian two's-complement integer: a number when it is safe, else a bigint. */
function decodeLong(b: Uint8Array): number | bigint {
  if (b.length === 0) return 0;
  let v = 0n;
  for (let i = b.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]);
  if (b[b.length - 1] & 0x80) v -= 1n << BigInt(8 * b.length);
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}
