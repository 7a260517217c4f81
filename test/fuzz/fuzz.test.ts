/**
 * The fuzz suite (issue 13): thousands of mutated safetensors, .npy, .pb and .onnx files
 * (mutators.ts) through the library and a sample of them through the real CLI, each in a child
 * process under a time and a memory limit; every file tensorcast accepts is read again by an
 * independent peer, and so is every file it writes.
 *
 * Outcomes per case: accepted, clean error (a TensorcastError / exit 1 with one line), or a
 * failure: crash (any other exception, INTERNAL, a stack trace, another exit code), hang (over the
 * time limit), memory (over the heap or resident limit), corrupt output (an output that does not
 * read back as Cast of the input, an output left by a failed run, a temporary left behind),
 * inconsistent (two of tensorcast's own readers disagree on the same file), unsafe output (the
 * CLI prints a control character, such as an ANSI escape from a tensor name), and peer
 * disagreement (tensorcast accepts what its peer refuses, or they read different values):
 *   .npy        numpy.load (python3-numpy)
 *   .pb, .onnx  protobuf + onnx 1.12 (python3-onnx), which lays out each tensor's data itself;
 *               onnxruntime-node (a .pb wrapped as an initializer; a model loaded whole)
 *   safetensors safetensors-peer.ts, written from the format's published rules
 * The test fails when any failure count is not zero, and prints a table per format and each
 * failure grouped by cause with one case to reproduce it.
 *
 * One command: `npm run fuzz` (builds, then runs this file). Environment:
 *   TENSORCAST_FUZZ_CASES       mutated cases per format (default 500)
 *   TENSORCAST_FUZZ_CLI         cases per format also run through the CLI (default 16, plus the heavy ones)
 *   TENSORCAST_FUZZ_TIMEOUT_MS  per case (default 10000)
 *   TENSORCAST_FUZZ_SAVE        a folder to copy one reproducer per failure cause into
 *   TENSORCAST_FUZZ_REPORT      a file to write every outcome to, as JSON
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { openTensorFile } from "../../src/node/index.js";
import { scratch } from "../node/helpers.js";
import { peerMissing, PYTHON } from "../support/onnx-peer.js";
import { runCli } from "./cli.js";
import { digest } from "./digest.js";
import { heavyCases, makeCase, type Case } from "./mutators.js";
import { fuzzPaths, pathTable } from "./paths.js";
import type { CaseResult, FileRead, Manifest, ManifestCase } from "./protocol.js";
import { readSafetensors, SAFETENSORS_BITS } from "./safetensors-peer.js";
import { EXTENSION, FORMATS, ROOT, seeds, type Format, type Seed } from "./seeds.js";
import { supervise, type Failure } from "./supervise.js";
import type { OrtVerdict } from "./ort-worker.js";
import { envCount, FULL, runs } from "../support/suite.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const env = envCount;
const CASES = env("TENSORCAST_FUZZ_CASES", runs(500, 8));
const CLI_CASES = env("TENSORCAST_FUZZ_CLI", runs(16, 2));
const TIMEOUT_MS = env("TENSORCAST_FUZZ_TIMEOUT_MS", 10_000);
const LIMITS = { timeoutMs: TIMEOUT_MS, heapMb: 512, rssLimitBytes: 1536 * 2 ** 20, parallel: 2 };
/**
 * The heavy limit probes (200,000 tensors, 20,000 nested groups, ...) get this long per step:
 * they are legal or near-legal files whose work grows with their size, and the question for them
 * is "bounded, or not" (memory is held to LIMITS). Measured on 2 cores with other work running:
 * every step of 200,000 empty safetensors tensors 16 s in all (resident 600 MiB at most), of
 * 200,000 one-byte ONNX initializers 20-32 s (decodeModel 1.6 s, open and read every tensor 2.3 s,
 * inspect 2.7 s, convert to safetensors 5-10 s, reading the output back 2.6 s).
 */
const HEAVY_TIMEOUT_MS = env("TENSORCAST_FUZZ_HEAVY_TIMEOUT_MS", 60_000);
/**
 * And this much heap, each in a worker of its own: the worker keeps every tensor it read (to check
 * the conversions against Cast) besides what the library holds, which for the 200,000-initializer
 * model came within a few MiB of 512 MiB on Node 24 (heap exhausted once in CI, not locally). The
 * resident limit in LIMITS still applies.
 */
const HEAVY_HEAP_MB = 1024;

/** Why the peers cannot run (the test is skipped), or undefined. Under CI a missing peer fails instead. */
function peersMissing(): string | undefined {
  const why = peerMissing();
  if (why && process.env.CI) throw new Error(`CI=${process.env.CI} and ${why}: .ci/run installs python3-onnx and python3-numpy`);
  return why;
}

type Category = "accepted" | "clean" | "crash" | "hang" | "memory" | "corrupt" | "inconsistent" | "peer" | "unsafe";
const BAD: readonly Category[] = ["crash", "hang", "memory", "corrupt", "inconsistent", "peer", "unsafe"];

interface Finding {
  readonly format: Format;
  readonly index: number;
  readonly category: Category;
  /** What went wrong, with numbers and paths blurred so that findings of one cause group together. */
  readonly cause: string;
  readonly detail: string;
  /** The ops that met it: open, inspect, convert1, cli diff, ... */
  readonly ops: string[];
}

/** Blurs what varies between cases of one cause: numbers, paths, quoted names. */
function causeOf(text: string): string {
  return text
    .replace(/\/[^\s:'"]*\/(run-\d+\/)?[\w.-]+/g, "<file>")
    .replace(/"[^"]*"/g, '"…"')
    .replace(/'[^']*'/g, "'…'")
    .replace(/\d+/g, "N")
    .slice(0, 160);
}

// ---- the peers -----------------------------------------------------------------------------------

const SAFETENSORS_CODES: Record<string, string> = {
  F64: "float64", F32: "float32", F16: "float16", BF16: "bfloat16", I64: "int64", I32: "int32", I16: "int16", I8: "int8",
  U64: "uint64", U32: "uint32", U16: "uint16", U8: "uint8", BOOL: "bool", F8_E4M3: "float8e4m3fn", F8_E5M2: "float8e5m2",
  F8_E8M0: "float8e8m0", F8_E4M3FNUZ: "float8e4m3fnuz", F8_E5M2FNUZ: "float8e5m2fnuz", F4: "float4e2m1", F6_E2M3: "float6e2m3",
  F6_E3M2: "float6e3m2", C64: "complex64",
};

/** How NumPy spells each type (little-endian), or the ml_dtypes name it stands for. */
const NUMPY_DESCR: Record<string, string> = {
  bool: "|b1", int8: "|i1", uint8: "|u1", int16: "<i2", uint16: "<u2", int32: "<i4", uint32: "<u4", int64: "<i8", uint64: "<u8",
  float16: "<f2", float32: "<f4", float64: "<f8", complex64: "<c8", complex128: "<c16",
  bfloat16: "ml:bfloat16", float8e4m3fn: "ml:float8_e4m3fn", float8e4m3fnuz: "ml:float8_e4m3fnuz", float8e5m2: "ml:float8_e5m2",
  float8e5m2fnuz: "ml:float8_e5m2fnuz", float8e8m0: "ml:float8_e8m0fnu", float4e2m1: "ml:float4_e2m1fn", float6e2m3: "ml:float6_e2m3fn",
  float6e3m2: "ml:float6_e3m2fn", int4: "ml:int4", uint4: "ml:uint4", int2: "ml:int2", uint2: "ml:uint2",
};
const BITS: Record<string, number> = { float4e2m1: 4, int4: 4, uint4: 4, int2: 2, uint2: 2, float6e2m3: 6, float6e3m2: 6 };

/** Packed sub-byte codes, one per byte as .npy stores them (written here, not taken from src/). */
function unpack(hex: string, bits: number, count: number): string {
  const b = Buffer.from(hex, "hex");
  const out = Buffer.alloc(count);
  for (let i = 0; i < count; i++) {
    const bit = i * bits;
    const word = b[bit >> 3] | ((b[(bit >> 3) + 1] ?? 0) << 8);
    out[i] = (word >> (bit & 7)) & ((1 << bits) - 1);
  }
  return digest(out);
}

/** Equal bytes, or float32 words that are both NaN (a float_data NaN's payload does not survive Python's double). */
function sameData(ours: string | undefined, theirs: string | undefined, floaty: boolean): boolean {
  if (ours === theirs) return true;
  if (!floaty || !ours || !theirs || ours.startsWith("sha:") || ours.length !== theirs.length) return false;
  const a = Buffer.from(ours, "hex");
  const b = Buffer.from(theirs, "hex");
  for (let i = 0; i + 4 <= a.length; i += 4) {
    const x = a.readFloatLE(i);
    const y = b.readFloatLE(i);
    if (!(Number.isNaN(x) && Number.isNaN(y)) && a.readUInt32LE(i) !== b.readUInt32LE(i)) return false;
  }
  return true;
}

function checkSafetensors(f: FileRead): string | undefined {
  const peer = readSafetensors(readFileSync(f.path));
  if (!peer.ok) return `safetensors peer refuses: ${peer.why}`;
  if (peer.tensors.length !== f.tensors.length) return `safetensors peer reads ${peer.tensors.length} tensors, tensorcast ${f.tensors.length}`;
  // By name through a map: a find per tensor was quadratic, 15 minutes for the 200,000-tensor probes.
  const byName = new Map(peer.tensors.map((x) => [x.name, x]));
  for (const t of f.tensors) {
    const p = byName.get(t.name);
    if (!p) return `safetensors peer has no tensor ${JSON.stringify(t.name)}`;
    if (SAFETENSORS_CODES[p.code] !== t.dtype || p.shape.join() !== t.shape.join()) return `safetensors peer reads ${p.code} [${p.shape}], tensorcast ${t.dtype} [${t.shape}]`;
    if (digest(p.bytes) !== t.data) return `safetensors peer reads other bytes for ${JSON.stringify(t.name)}`;
  }
  void SAFETENSORS_BITS;
  return undefined;
}

interface NpyVerdict { ok: boolean; why?: string; descr?: string; ml?: string | null; shape?: number[]; data?: string }
interface ProtoTensor { name: string; data_type: number; dims: number[]; data?: string; strings?: string[]; floaty?: boolean; layout?: string; checker?: string }
interface ProtoVerdict { ok: boolean; why?: string; has_graph?: boolean; tensors?: ProtoTensor[]; checker?: string }

function askPython<V>(items: readonly [string, string][]): V[] {
  const out: V[] = [];
  for (let at = 0; at < items.length; at += 1000) {
    const batch = items.slice(at, at + 1000);
    const r = spawnSync(PYTHON, [join(ROOT, "test", "fuzz", "peers.py")], { input: JSON.stringify(batch), encoding: "utf8", maxBuffer: 512 << 20, timeout: 600_000 });
    if (r.status !== 0) throw new Error(`the python peer failed: ${r.stderr.slice(-2000)}`);
    out.push(...(JSON.parse(r.stdout) as V[]));
  }
  return out;
}

function checkNpy(f: FileRead, v: NpyVerdict): string | undefined {
  if (!v.ok) return `numpy refuses: ${v.why}`;
  const t = f.tensors[0];
  const descr = v.ml ? `ml:${v.ml}` : v.descr;
  if (NUMPY_DESCR[t.dtype] !== descr) return `numpy reads ${descr}, tensorcast ${t.dtype}`;
  if (v.shape!.join() !== t.shape.join()) return `numpy reads shape (${v.shape}), tensorcast [${t.shape}]`;
  const size = t.shape.reduce((a, b) => a * b, 1);
  const ours = BITS[t.dtype] && t.data && !t.data.startsWith("sha:") ? unpack(t.data, BITS[t.dtype], size) : t.data;
  if (ours !== v.data) return `numpy reads other bytes`;
  return undefined;
}

function checkProto(f: FileRead, v: ProtoVerdict): string | undefined {
  if (!v.ok) return `protobuf refuses: ${v.why}`;
  if (f.format === "onnx" && !v.has_graph) return "onnx peer: the model has no graph";
  const theirs = v.tensors ?? [];
  if (theirs.length !== f.tensors.length) return `onnx peer reads ${theirs.length} tensors, tensorcast ${f.tensors.length}`;
  for (let i = 0; i < theirs.length; i++) {
    const p = theirs[i];
    const t = f.tensors[i];
    if (p.layout) return `onnx peer refuses tensor data: ${p.layout}`;
    if (p.data_type !== t.onnx || p.dims.join() !== t.shape.join()) return `onnx peer reads data_type ${p.data_type} dims [${p.dims}], tensorcast ${t.dtype} [${t.shape}]`;
    if (f.format === "onnx" && p.name !== t.name) return `onnx peer reads name ${JSON.stringify(p.name)}, tensorcast ${JSON.stringify(t.name)}`;
    if (p.strings === undefined && !sameData(t.data, p.data, p.floaty ?? false)) return `onnx peer reads other bytes for tensor ${i}`;
  }
  return undefined;
}

/** test/fuzz/regressions/: one small file per cause the suite found, run every time whatever the generator makes. */
function regressions(format: Format): Case[] {
  const folder = join(ROOT, "test", "fuzz", "regressions");
  if (!existsSync(folder)) return [];
  return readdirSync(folder).sort().filter((f) => f.endsWith(`.${EXTENSION[format]}`))
    .map((f) => ({ format, label: `regression ${f}`, bytes: readFileSync(join(folder, f)) }));
}

// ---- the suite -------------------------------------------------------------------------------------

interface Row { cases: number; accepted: number; clean: number; crash: number; hang: number; memory: number; corrupt: number; inconsistent: number; peer: number; unsafe: number; cli: number }
const emptyRow = (): Row => ({ cases: 0, accepted: 0, clean: 0, crash: 0, hang: 0, memory: 0, corrupt: 0, inconsistent: 0, peer: 0, unsafe: 0, cli: 0 });

const missing = peersMissing();

test("fuzz: mutated safetensors, .npy, .pb and .onnx files end in a clean error or a correct result that the peers agree with", { skip: missing }, async () => {
  const dir = scratch();
  const all = seeds();
  const cases: (Case & { index: number })[] = [];
  const manifestCases: ManifestCase[] = [];
  const seedPath = new Map<Seed, string>();
  for (const format of FORMATS) {
    mkdirSync(join(dir, "seeds", format), { recursive: true });
    all[format].forEach((s, k) => {
      const path = join(dir, "seeds", format, `${k}.${EXTENSION[format]}`);
      writeFileSync(path, s.bytes);
      seedPath.set(s, path);
      cases.push({ format, label: `seed ${s.name}`, seed: s, bytes: s.bytes, index: cases.length });
    });
    // The heavy limit probes (200,000 tensors and the like, minutes of work) are the full suite's.
    for (const c of FULL ? heavyCases(format, all[format]) : []) {
      cases.push({ ...c, index: cases.length });
    }
    for (const r of regressions(format)) cases.push({ ...r, index: cases.length });
    for (let i = 0; i < CASES; i++) cases.push({ ...makeCase(format, i, all[format]), index: cases.length });
  }
  mkdirSync(join(dir, "cases"));
  for (const c of cases) {
    const path = join(dir, "cases", `${c.index}.${EXTENSION[c.format]}`);
    writeFileSync(path, c.bytes);
    manifestCases.push({ index: c.index, format: c.format, path, seedPath: c.seed ? seedPath.get(c.seed) : undefined, label: c.label });
  }
  const manifest: Manifest = { dir: join(dir, "runs"), cases: manifestCases };
  const manifestPath = join(dir, "manifest.json");
  writeFileSync(manifestPath, JSON.stringify(manifest));

  // 1. The library, in supervised worker processes.
  const started = Date.now();
  const heavy = new Set(cases.filter((c) => c.heavy).map((c) => c.index));
  const lib = await supervise<CaseResult>(join(HERE, "library-worker.js"), [manifestPath], cases.length, {
    ...LIMITS, timeoutFor: (i) => (heavy.has(i) ? HEAVY_TIMEOUT_MS : TIMEOUT_MS), heapFor: (i) => (heavy.has(i) ? HEAVY_HEAP_MB : LIMITS.heapMb),
  });
  const libSeconds = (Date.now() - started) / 1000;

  const findings: Finding[] = [];
  // One finding per case and cause: the same fault seen by several ops ("open", "inspect", "cli
  // convert", ...) is listed once, with the ops that met it.
  const add = (c: ManifestCase, category: Category, detail: string): void => {
    const colon = detail.indexOf(": ");
    const op = colon > 0 && colon < 24 ? detail.slice(0, colon) : "";
    const message = op ? detail.slice(colon + 2) : detail;
    const cause = `${category}: ${causeOf(message.replace(/^internal error: /, "").replace(/ This is a bug in tensorcast.*$/, "").replace(/ at \w+ \(file:.*$/, "").replace(/\.$/, ""))}`;
    const same = findings.find((f) => f.index === c.index && f.cause === cause);
    if (same) {
      if (op && !same.ops.includes(op)) same.ops.push(op);
      return;
    }
    findings.push({ format: c.format, index: c.index, category, cause, detail: message, ops: op ? [op] : [] });
  };
  const rows = Object.fromEntries(FORMATS.map((f) => [f, emptyRow()])) as Record<Format, Row>;
  const accepted: FileRead[] = [];
  const fileCase = new Map<string, ManifestCase>();
  for (const c of manifestCases) {
    rows[c.format].cases++;
    const failure: Failure | undefined = lib.failures.get(c.index);
    if (failure) {
      add(c, failure.kind, failure.detail);
      continue;
    }
    const r = lib.results.get(c.index)!;
    for (const [op, outcome] of Object.entries(r.ops)) if (outcome.startsWith("X:")) add(c, "crash", `${op}: ${outcome.slice(2)}`);
    for (const p of r.problems) add(c, p.startsWith("corrupt") ? "corrupt" : "inconsistent", p.replace(/^(corrupt output|inconsistent|wrong result): /, ""));
    for (const f of r.files) {
      accepted.push(f);
      fileCase.set(f.path, c);
    }
    const seed = cases[c.index].label.startsWith("seed ") ? cases[c.index].seed : undefined;
    if (seed && r.ops.open !== (seed.refusal ?? "ok")) add(c, "inconsistent", `seed ${seed.name} reads as ${r.ops.open}, not ${seed.refusal ?? "ok"}`);
  }

  // 2. The peers, on every file tensorcast accepted or wrote.
  const pythonItems: [string, string][] = [];
  const pythonFiles: FileRead[] = [];
  const ortItems: [string, string, number][] = [];
  const ortFiles: FileRead[] = [];
  for (const f of accepted) {
    if (f.format === "safetensors") {
      const why = checkSafetensors(f);
      if (why) add(fileCase.get(f.path)!, "peer", `${f.role}: ${why}`);
    } else {
      pythonItems.push([f.format === "npy" ? "npy" : f.format === "onnx" ? "model" : "tensor", f.path]);
      pythonFiles.push(f);
      if (f.format !== "npy") {
        ortItems.push([f.format === "onnx" ? "model" : "tensor", f.path, f.tensors[0]?.onnx ?? 1]);
        ortFiles.push(f);
      }
    }
  }
  const verdicts = askPython<NpyVerdict & ProtoVerdict>(pythonItems);
  pythonFiles.forEach((f, k) => {
    const why = f.format === "npy" ? checkNpy(f, verdicts[k]) : checkProto(f, verdicts[k]);
    if (why) add(fileCase.get(f.path)!, "peer", `${f.role}: ${why}`);
  });
  const ortList = join(dir, "ort.json");
  writeFileSync(ortList, JSON.stringify(ortItems));
  const ort = await supervise<OrtVerdict>(join(HERE, "ort-worker.js"), [ortList], ortItems.length, { ...LIMITS, timeoutMs: 30_000 });
  // onnxruntime also refuses models for reasons beyond reading them (unknown ops, type checks,
  // graphs without outputs), so a model it refuses counts only when its seed loaded and the
  // message is about reading: protobuf or a tensor's data. A wrapped .pb tensor it refuses counts.
  const ortNotes = new Map<string, number>();
  const ortRefusals: { index: number; role: string; format: string; note: string; label: string }[] = [];
  const seedLoads = new Set<string>();
  ortFiles.forEach((f, k) => {
    const v = ort.results.get(k);
    if (v?.load === "ok" && fileCase.get(f.path)!.label.startsWith("seed ")) seedLoads.add(f.path);
  });
  ortFiles.forEach((f, k) => {
    const c = fileCase.get(f.path)!;
    const failed = ort.failures.get(k);
    const v = ort.results.get(k);
    const note = failed ? `onnxruntime ${failed.kind}: ${failed.detail}` : v && v.load !== "ok" ? `onnxruntime refuses: ${v.load}` : undefined;
    if (note) {
      ortNotes.set(causeOf(note), (ortNotes.get(causeOf(note)) ?? 0) + 1);
      ortRefusals.push({ index: c.index, role: f.role, format: f.format, note, label: c.label });
    }
    if (!v) return;
    if (f.format === "pb") {
      // Types onnxruntime-node does not carry (bfloat16, float8 and complex outputs, int4 and int2 in Identity) are not its verdict on the data.
      // Nor is a protobuf refusal of the wrapper, which nests the tensor two levels deeper.
      if (v.load !== "ok" && !/Unsupported data type|not currently registered or supported|Could not find an implementation|Type Error: Type 'tensor\(|protobuf parsing failed/.test(v.load)) {
        add(c, "peer", `${f.role}: onnxruntime refuses the tensor: ${v.load}`);
      } else if (v.data !== undefined && f.tensors[0]?.data !== undefined && !sameData(f.tensors[0].data, v.data, false)) {
        add(c, "peer", `${f.role}: onnxruntime reads other bytes`);
      }
    } else if (v.load !== "ok") {
      const seedPathOf = manifestCases[c.index].seedPath;
      if (seedPathOf && seedLoads.has(seedPathOf) && /protobuf|parse|raw_data|TensorProto|initializer|data size|external|corrupt|dims/i.test(v.load)) {
        add(c, "peer", `${f.role}: onnxruntime refuses the model: ${v.load}`);
      }
    }
  });

  // 3. A sample through the real CLI: the heavy cases, and CLI_CASES more per format.
  const cliDir = join(dir, "cli");
  mkdirSync(cliDir);
  const sample = FORMATS.flatMap((format) => {
    const of = cases.filter((c) => c.format === format);
    // Always: the heavy probes, the regressions, and (up to 8) the cases with crafted tensor names, which the CLI prints.
    const always = [...new Set([
      ...of.filter((c) => c.heavy || c.label.startsWith("regression ")),
      ...of.filter((c) => !c.heavy && /\bname\b/.test(c.label)).slice(0, 8),
    ])];
    const step = Math.max(1, Math.floor(of.length / CLI_CASES));
    return [...always, ...of.filter((c, k) => k % step === 0 && !always.includes(c)).slice(0, CLI_CASES)];
  });
  const cliStarted = Date.now();
  const runOne = async (c: (typeof sample)[number]): Promise<void> => {
    const m = manifestCases[c.index];
    rows[c.format].cli++;
    const outDir = join(cliDir, String(c.index));
    mkdirSync(outDir);
    const out = join(outDir, `out.${c.format === "pb" ? "npy" : "safetensors"}`);
    const runs: [string, string[]][] = [
      ["inspect", ["inspect", m.path, "--quiet"]],
      ["convert", ["convert", m.path, "--to", "bfloat16", "-o", out, "--quiet", "--include-int"]],
    ];
    if (m.seedPath) runs.push(["diff", ["diff", m.path, m.seedPath, "--quiet"]]);
    for (const [name, args] of runs) {
      const v = await runCli(args, c.heavy ? { ...LIMITS, timeoutMs: HEAVY_TIMEOUT_MS } : LIMITS);
      if (v.kind === "crash" || v.kind === "hang" || v.kind === "memory" || v.kind === "unsafe") add(m, v.kind, `cli ${name}: ${v.detail}`);
      // A process killed for a hang or memory cannot clean up: only the other outcomes are held to it.
      if (name === "convert" && (v.kind === "ok" || v.kind === "clean" || v.kind === "crash")) {
        const left = readdirSync(outDir).filter((f) => f.endsWith(".tmp"));
        if (left.length > 0) add(m, "corrupt", `cli convert left ${left.join(", ")}`);
        if (v.kind !== "ok" && existsSync(out)) add(m, "corrupt", `cli convert failed (${v.kind} ${v.detail}) but its output exists`);
        if (v.kind === "ok") {
          try {
            const f = await openTensorFile(out);
            await f.close();
          } catch (e) {
            add(m, "corrupt", `cli convert wrote an output that reads back as ${(e as Error).message}`);
          }
        }
      }
    }
  };
  const queue = [...sample];
  await Promise.all(Array.from({ length: LIMITS.parallel }, async () => {
    for (let c = queue.shift(); c; c = queue.shift()) await runOne(c);
  }));
  const cliSeconds = (Date.now() - cliStarted) / 1000;

  // 4. The tally.
  const byCase = new Map<number, Category[]>();
  for (const f of findings) byCase.set(f.index, [...(byCase.get(f.index) ?? []), f.category]);
  for (const c of manifestCases) {
    const row = rows[c.format];
    const r = lib.results.get(c.index);
    const bad = new Set(byCase.get(c.index) ?? []);
    for (const b of bad) row[b as keyof Row]++;
    if (r && r.ops.open === "ok") row.accepted++;
    else if (r && !bad.has("crash")) row.clean++;
  }
  const header = ["format", "cases", "accepted", "clean errors", "crashes", "hangs", "memory", "corrupt outputs", "inconsistent", "peer disagreements", "unsafe output", "via CLI"];
  const lines = [header, ...FORMATS.map((f) => {
    const r = rows[f];
    return [f, r.cases, r.accepted, r.clean, r.crash, r.hang, r.memory, r.corrupt, r.inconsistent, r.peer, r.unsafe, r.cli].map(String);
  })];
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i].length)));
  const table = lines.map((l) => l.map((x, i) => x.padStart(widths[i])).join("  ")).join("\n");
  const causes = new Map<string, Finding[]>();
  for (const f of findings) causes.set(f.cause, [...(causes.get(f.cause) ?? []), f]);
  const save = process.env.TENSORCAST_FUZZ_SAVE;
  if (save) mkdirSync(save, { recursive: true });
  const grouped = [...causes.entries()].sort((a, b) => b[1].length - a[1].length).map(([cause, list], k) => {
    const first = list[0];
    const c = cases[first.index];
    let where = "";
    if (save) {
      const file = join(save, `${String(k + 1).padStart(2, "0")}-${first.format}.${EXTENSION[first.format]}`);
      copyFileSync(manifestCases[first.index].path, file);
      where = ` -> ${file}`;
    }
    const formats = [...new Set(list.map((f) => f.format))].join(",");
    const ops = [...new Set(list.flatMap((f) => f.ops))].join(", ");
    return `  ${list.length} x [${formats}] ${cause}\n      ops: ${ops || "-"}\n      e.g. case ${first.index} (${c.label.slice(0, 150)})${where}\n      ${first.detail.slice(0, 300)}`;
  });
  const slowest = [...lib.results.values()].sort((a, b) => b.ms - a.ms).slice(0, 5)
    .map((r) => `  ${(r.ms / 1000).toFixed(1)} s, ${Math.round(r.rss / 2 ** 20)} MiB resident after: case ${r.index} (${cases[r.index].label.slice(0, 100)})`);
  const notes = [...ortNotes.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([n, k]) => `  ${k} x ${n}`);
  console.log(
    `\nfuzz: ${cases.length} cases (${CASES} mutated per format, plus the seeds and the heavy limit probes), library ${libSeconds.toFixed(0)} s, ` +
      `peers on ${accepted.length} accepted or written files, CLI ${sample.length} cases in ${cliSeconds.toFixed(0)} s\n${table}\n` +
      `slowest cases that finished:\n${slowest.join("\n")}\n` +
      (grouped.length ? `failures by cause (${causes.size}):\n${grouped.join("\n")}\n` : "no failures\n") +
      (notes.length ? `onnxruntime refusals, not counted (it also checks graphs and ops):\n${notes.join("\n")}\n` : ""),
  );
  if (process.env.TENSORCAST_FUZZ_REPORT) {
    writeFileSync(process.env.TENSORCAST_FUZZ_REPORT, JSON.stringify({
      rows, findings: findings.map((f) => ({ ...f, label: cases[f.index].label })), ortRefusals,
      times: [...lib.results.values()].map((r) => ({ index: r.index, ms: r.ms, label: cases[r.index].label })),
    }, null, 1));
  }
  const failures = findings.filter((f) => BAD.includes(f.category));
  assert.equal(failures.length, 0, `${failures.length} failures in ${causes.size} causes; see the table above`);
});

// Issue 24's data-loss classes (paths.ts): no peers needed, so never skipped.
test("fuzz: output paths that are an input's files, and look-alike temporaries beside OUT, lose nothing", async () => {
  const { rows, failures } = await fuzzPaths(scratch(), CASES, CLI_CASES);
  console.log(`\nfuzz paths (${CASES} cases per class, ${CLI_CASES} of them through the CLI):\n${pathTable(rows)}\n${failures.slice(0, 40).join("\n") || "no failures"}\n`);
  assert.equal(failures.length, 0, `${failures.length} failures; see the table above`);
});
