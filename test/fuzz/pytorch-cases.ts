/**
 * The PyTorch class of the fuzz suite: mutated torch.save checkpoints (the fixtures of
 * test/fixtures/pytorch, zip and legacy). A zip case is either its data.pkl mutated and the archive
 * rebuilt with correct CRCs (so the mutation reaches the pickle reader rather than stopping at the
 * checksum), or the file's own bytes mutated (the zip reader's turn). Pickle mutations: bytes
 * flipped, opcodes inserted, ranges dropped or repeated, integers changed, and hostile calls spliced
 * in (os.system, builtins.exec / eval / getattr / __import__, subprocess.Popen, a REDUCE of an
 * allowed global with bad arguments), each command of which would create MARKER if it ever ran.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { crc32 } from "../../src/io/pytorch/zip.js";
import { Rng } from "../support/rng.js";
import { ROOT } from "./seeds.js";

export interface PytorchCase {
  readonly label: string;
  readonly bytes: Uint8Array;
}

const DIR = join(ROOT, "test", "fixtures", "pytorch");
export const PYTORCH_SEEDS = ["dtypes.pt", "dtypes.legacy.pt", "layouts.pt", "layouts.legacy.pt", "nested.pt", "bigendian.pt", "sharded/pytorch_model-00001-of-00002.bin"];

/** A stored zip of `entries`, as torch.save lays one out (no data descriptors, no alignment). */
export function storedZip(entries: readonly (readonly [string, Uint8Array])[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let at = 0;
  for (const [name, data] of entries) {
    const n = new TextEncoder().encode(name);
    const local = new Uint8Array(30 + n.length);
    const lv = new DataView(local.buffer);
    lv.setUint32(0, 0x04034b50, true);
    lv.setUint16(4, 20, true);
    lv.setUint32(14, crc32(data), true);
    lv.setUint32(18, data.length, true);
    lv.setUint32(22, data.length, true);
    lv.setUint16(26, n.length, true);
    local.set(n, 30);
    const c = new Uint8Array(46 + n.length);
    const cv = new DataView(c.buffer);
    cv.setUint32(0, 0x02014b50, true);
    cv.setUint16(4, 20, true);
    cv.setUint16(6, 20, true);
    cv.setUint32(16, crc32(data), true);
    cv.setUint32(20, data.length, true);
    cv.setUint32(24, data.length, true);
    cv.setUint16(28, n.length, true);
    cv.setUint32(42, at, true);
    c.set(n, 46);
    parts.push(local, data);
    central.push(c);
    at += local.length + data.length;
  }
  const cdSize = central.reduce((s, c) => s + c.length, 0);
  const end = new Uint8Array(22);
  const ev = new DataView(end.buffer);
  ev.setUint32(0, 0x06054b50, true);
  ev.setUint16(8, entries.length, true);
  ev.setUint16(10, entries.length, true);
  ev.setUint32(12, cdSize, true);
  ev.setUint32(16, at, true);
  return Buffer.concat([...parts, ...central, end]);
}

/** The entries of a stored zip (the seeds' own, read the simple way: by their central directory). */
function entriesOf(zip: Uint8Array): [string, Uint8Array][] {
  const v = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  let end = zip.length - 22;
  while (v.getUint32(end, true) !== 0x06054b50) end--;
  const count = v.getUint16(end + 10, true);
  let p = v.getUint32(end + 16, true);
  const out: [string, Uint8Array][] = [];
  for (let i = 0; i < count; i++) {
    const size = v.getUint32(p + 24, true);
    const nl = v.getUint16(p + 28, true);
    const el = v.getUint16(p + 30, true);
    const cl = v.getUint16(p + 32, true);
    const local = v.getUint32(p + 42, true);
    const name = new TextDecoder().decode(zip.subarray(p + 46, p + 46 + nl));
    const start = local + 30 + v.getUint16(local + 26, true) + v.getUint16(local + 28, true);
    out.push([name, zip.slice(start, start + size)]);
    p += 46 + nl + el + cl;
  }
  return out;
}

function binunicode(s: string): Uint8Array {
  const b = new TextEncoder().encode(s);
  const out = new Uint8Array(5 + b.length);
  out[0] = 0x58;
  new DataView(out.buffer).setUint32(1, b.length, true);
  out.set(b, 5);
  return out;
}

/** A call of a global with one str argument: GLOBAL, the str, TUPLE1, REDUCE. */
function call(module: string, name: string, arg: string): Uint8Array {
  return Buffer.concat([Buffer.from(`c${module}\n${name}\n`), binunicode(arg), Buffer.from([0x85, 0x52])]);
}

function hostileCalls(marker: string): Uint8Array[] {
  const touch = `touch ${marker}`;
  return [
    call("os", "system", touch), call("posix", "system", touch), call("builtins", "exec", `import os; os.system(${JSON.stringify(touch)})`),
    call("builtins", "eval", `__import__('os').system(${JSON.stringify(touch)})`), call("__builtin__", "eval", `__import__('os').system(${JSON.stringify(touch)})`),
    call("subprocess", "Popen", touch), call("builtins", "getattr", "system"), call("builtins", "__import__", "os"),
    call("torch", "load", marker), call("torch._utils", "_rebuild_tensor_v2", touch), call("collections", "OrderedDict", touch),
    call("_codecs", "encode", touch), call("torch.serialization", "_get_layout", touch),
  ];
}

const OPCODES = [0x28, 0x2e, 0x4a, 0x4b, 0x4d, 0x4e, 0x51, 0x52, 0x55, 0x58, 0x61, 0x62, 0x63, 0x65, 0x68, 0x6a, 0x5d, 0x71, 0x72, 0x73, 0x74, 0x75, 0x7d, 0x29, 0x47, 0x80, 0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8f, 0x93, 0x95, 0x94, 0x8c, 0x42, 0x69];

function mutate(rng: Rng, b: Uint8Array, marker: string): { bytes: Uint8Array; how: string } {
  const a = Buffer.from(b);
  const at = (): number => rng.below(Math.max(1, a.length));
  switch (rng.below(8)) {
    case 0: {
      const n = 1 + rng.below(8);
      for (let i = 0; i < n; i++) a[at()] = rng.below(256);
      return { bytes: a, how: `${n} bytes flipped` };
    }
    case 1: {
      const i = at();
      return { bytes: Buffer.concat([a.subarray(0, i), Buffer.from([OPCODES[rng.below(OPCODES.length)]]), a.subarray(i)]), how: `an opcode inserted at ${i}` };
    }
    case 2: {
      const i = at();
      const n = 1 + rng.below(32);
      return { bytes: Buffer.concat([a.subarray(0, i), a.subarray(i + n)]), how: `${n} bytes dropped at ${i}` };
    }
    case 3: {
      const i = at();
      const n = 1 + rng.below(64);
      const times = 1 + rng.below(200);
      return { bytes: Buffer.concat([a.subarray(0, i), ...Array(times).fill(a.subarray(i, i + n)), a.subarray(i)]), how: `${n} bytes at ${i} repeated ${times} times` };
    }
    case 4: {
      // A BININT1 / BININT2 / BININT made large: sizes, strides, offsets, counts.
      const ints = [...a.keys()].filter((i) => a[i] === 0x4b || a[i] === 0x4d || a[i] === 0x4a);
      if (ints.length === 0) return { bytes: a, how: "no integer to change" };
      const i = ints[rng.below(ints.length)];
      a[i] = 0x4a;
      const value = [0xffffffff, 0x7fffffff, 0x80000000, 0, 1, 2 ** 20][rng.below(6)];
      const out = Buffer.concat([a.subarray(0, i + 1), Buffer.alloc(4), a.subarray(i + 1 + (b[i] === 0x4b ? 1 : b[i] === 0x4d ? 2 : 4))]);
      out.writeUInt32LE(value, i + 1);
      return { bytes: out, how: `the integer at ${i} set to ${value}` };
    }
    case 5: {
      const calls = hostileCalls(marker);
      const k = rng.below(calls.length);
      const i = at();
      return { bytes: Buffer.concat([a.subarray(0, i), calls[k], a.subarray(i)]), how: `hostile call ${k} spliced at ${i}` };
    }
    case 6: {
      // A hostile call in place of the whole object: PROTO 2, the call, STOP.
      const calls = hostileCalls(marker);
      const k = rng.below(calls.length);
      return { bytes: Buffer.concat([Buffer.from([0x80, 2]), calls[k], Buffer.from([0x2e]), a.subarray(a.indexOf(0x2e) + 1)]), how: `the object replaced by hostile call ${k}` };
    }
    default: {
      const n = at();
      return { bytes: a.subarray(0, n), how: `truncated to ${n} bytes` };
    }
  }
}

/** `count` cases, deterministic in `seed`; MARKER is the file a hostile command would create. */
export function pytorchCases(count: number, seed: number, marker: string): PytorchCase[] {
  const rng = new Rng(seed);
  const seeds = PYTORCH_SEEDS.map((s) => [s, new Uint8Array(readFileSync(join(DIR, s)))] as const);
  const cases: PytorchCase[] = [];
  for (let i = 0; i < count; i++) {
    const [name, bytes] = seeds[rng.below(seeds.length)];
    const zip = bytes[0] === 0x50;
    if (zip && rng.below(3) !== 0) {
      // The pickle mutated inside a well-formed archive (CRCs recomputed).
      const entries = entriesOf(bytes);
      const k = entries.findIndex(([n]) => n.endsWith("/data.pkl"));
      const m = mutate(rng, entries[k][1], marker);
      entries[k] = [entries[k][0], m.bytes];
      if (rng.below(8) === 0) entries.push([entries[k][0], m.bytes]);
      cases.push({ label: `${name}: data.pkl: ${m.how}`, bytes: storedZip(entries) });
    } else {
      const m = mutate(rng, bytes, marker);
      cases.push({ label: `${name}: ${m.how}`, bytes: m.bytes });
    }
  }
  return cases;
}
