/**
 * Runs fuzz cases through the library in a child process (fuzz.test.ts starts it with a heap limit
 * and watches its time and memory, so a hang or a blow-up costs one case, not the suite).
 *
 * Usage: node library-worker.js MANIFEST FROM TO
 * For each case it prints "S <index>" before starting and "R <json>" (a CaseResult) when done.
 * Each case goes through decodeTensorProto / decodeModel (.pb / .onnx), openTensorFile with every
 * tensor read, inspectFile, diffFiles against its seed, and two convertFile runs to other formats;
 * each converted output is read back and compared with Cast applied to what was read.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cast, decodeModel, decodeTensorProto, Tensor, TensorcastError, type DTypeName } from "../../src/index.js";
import { convertFile, diffFiles, inspectFile, openTensorFile, type FileFormat } from "../../src/node/index.js";
import { digest } from "./digest.js";
import type { CaseResult, FileRead, Manifest, OpOutcome, TensorRead } from "./protocol.js";

/** An op's outcome: "ok", "E:<code>" for a TensorcastError, "X:<what>" for anything else. */
function outcomeOf(e: unknown): OpOutcome {
  if (e instanceof TensorcastError) {
    if (e.code === "INTERNAL") return `X:INTERNAL ${e.message.split("\n")[0].slice(0, 300)}`;
    return `E:${e.code}`;
  }
  const err = e as Error;
  const where = (err?.stack ?? "").split("\n").find((l) => l.includes("/src/")) ?? "";
  return `X:${err?.name ?? typeof e}: ${String(err?.message ?? e).split("\n")[0].slice(0, 300)} ${where.trim()}`;
}

/** Runs one op; "O <name>" tells the supervisor, which gives each op its own time limit. */
async function attempt(name: string, run: () => Promise<void> | void): Promise<OpOutcome> {
  process.stdout.write(`O ${name}\n`);
  try {
    await run();
    return "ok";
  } catch (e) {
    return outcomeOf(e);
  }
}

/** Elements per read: a multiple of 8, as FileTensor.read requires. */
const RUN = 1 << 20;

/** Opens `path` and reads every tensor whole, in runs of RUN elements. */
async function readAll(path: string, format?: FileFormat): Promise<{ tensors: TensorRead[]; raw: Map<string, Uint8Array> }> {
  const file = await openTensorFile(path, format ? { format } : {});
  try {
    const tensors: TensorRead[] = [];
    const raw = new Map<string, Uint8Array>();
    for (const t of file.tensors) {
      const entry: TensorRead = { name: t.name, dtype: t.dtype.name, onnx: t.dtype.onnx, shape: [...t.shape] };
      if (t.dtype.kind !== "string") {
        const parts: Uint8Array[] = [];
        if (t.size === 0) parts.push(await t.read(0, 0));
        for (let at = 0; at < t.size; at += RUN) parts.push(await t.read(at, Math.min(RUN, t.size - at)));
        const bytes = new Uint8Array(Buffer.concat(parts));
        if (bytes.length !== t.byteLength) throw new Error(`read ${bytes.length} bytes of ${t.name}, expected ${t.byteLength}`);
        entry.data = digest(bytes);
        raw.set(t.name, bytes);
      }
      tensors.push(entry);
    }
    return { tensors, raw };
  } finally {
    await file.close();
  }
}

/** Which conversions a case gets: another type, and another format where the input allows. */
function conversions(format: FileFormat, single: boolean): { out: string; to: DTypeName; names?: "first-float" }[] {
  switch (format) {
    case "safetensors":
      return [{ out: "out.safetensors", to: "bfloat16" }, single ? { out: "out.npy", to: "float16" } : { out: "out2.safetensors", to: "float8e4m3fn" }];
    case "npy":
      return [{ out: "out.safetensors", to: "float8e5m2" }, { out: "out.pb", to: "float16" }];
    case "pb":
      return [{ out: "out.npy", to: "float16" }, { out: "out.safetensors", to: "bfloat16" }];
    case "onnx":
      return [{ out: "out.safetensors", to: "float16" }, { out: "out.onnx", to: "float16", names: "first-float" }];
    case "pytorch":
    case "gguf":
      return [{ out: "out.safetensors", to: "bfloat16" }];
  }
}

function formatOf(path: string): FileFormat {
  return path.slice(path.lastIndexOf(".") + 1) as FileFormat;
}

function leftovers(dir: string): string[] {
  return readdirSync(dir).filter((f) => f.endsWith(".tmp"));
}

async function runCase(m: Manifest, index: number): Promise<CaseResult> {
  const started = performance.now();
  const c = m.cases[index];
  const dir = join(m.dir, `run-${index}`);
  // Empty, even if a worker killed for an earlier case had already run this one.
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const ops: Record<string, OpOutcome> = {};
  const problems: string[] = [];
  const files: FileRead[] = [];
  const bytes = readFileSync(c.path);

  // 1. The in-memory decoders.
  let decoded: TensorRead[] | undefined;
  if (c.format === "pb" || c.format === "onnx") {
    ops.decode = await attempt("decode", () => {
      const list = c.format === "pb" ? [decodeTensorProto(bytes)] : decodeModel(bytes).graph.initializers;
      decoded = list.map(({ name, tensor }) => ({
        name: c.format === "pb" ? "" : name, dtype: tensor.dtype.name, onnx: tensor.dtype.onnx, shape: [...tensor.shape],
        data: tensor.dtype.kind === "string" ? undefined : digest(tensor.bytes()),
      }));
    });
  }

  // 2. The file reader, every tensor read.
  let read: Awaited<ReturnType<typeof readAll>> | undefined;
  ops.open = await attempt("open", async () => {
    read = await readAll(c.path);
  });
  if (read) files.push({ path: c.path, format: c.format, role: "input", tensors: read.tensors });
  else if (decoded) files.push({ path: c.path, format: c.format, role: "input-decoded", tensors: decoded });
  if (read && decoded) {
    // Both readers accepted: they must read the same tensors (a .pb's name is the file's name for openTensorFile).
    const a = read.tensors.map((t) => `${c.format === "pb" ? "" : t.name}|${t.dtype}|${t.shape}|${t.data ?? "-"}`);
    const b = decoded.map((t) => `${t.name}|${t.dtype}|${t.shape}|${t.data ?? "-"}`);
    if (a.join("\n") !== b.join("\n")) problems.push(`inconsistent: openTensorFile and ${c.format === "pb" ? "decodeTensorProto" : "decodeModel"} read different tensors`);
  } else if ((read === undefined) !== (decoded === undefined) && ops.decode !== undefined) {
    // decodeModel reads more of a model than openTensorFile (nodes, attributes, ir_version), so
    // only its accepting what the file reader refuses is a disagreement; for a .pb both read all.
    const decoderStricter = c.format === "onnx" && read !== undefined;
    if (!ops.open.startsWith("X:") && !ops.decode.startsWith("X:") && !decoderStricter) {
      problems.push(`inconsistent: openTensorFile ${ops.open}, ${c.format === "pb" ? "decodeTensorProto" : "decodeModel"} ${ops.decode}`);
    }
  }

  // 3. inspect: the same tensors as the reader lists.
  ops.inspect = await attempt("inspect", async () => {
    const r = await inspectFile(c.path);
    if (read) {
      const listed = r.tensors.map((t) => `${t.name}|${t.dtype}|${t.shape}`).join("\n");
      const expected = read.tensors.map((t) => `${t.name}|${t.dtype}|${t.shape}`).join("\n");
      if (listed !== expected) problems.push("wrong result: inspect lists other tensors than openTensorFile");
    }
  });
  if ((ops.inspect === "ok") !== (read !== undefined) && !ops.inspect.startsWith("X:")) {
    problems.push(`inconsistent: inspect ${ops.inspect}, openTensorFile ${ops.open}`);
  }

  // 4. diff against the seed.
  if (c.seedPath) ops.diff = await attempt("diff", async () => void (await diffFiles(c.path, c.seedPath!)));

  // 5. Two conversions; each output read back and checked, nothing left behind on failure.
  const single = (read?.tensors.length ?? 0) === 1;
  let k = 0;
  for (const conv of conversions(c.format, single)) {
    const key = `convert${++k}`;
    const out = join(dir, conv.out);
    let names: string[] | undefined;
    if (conv.names && read) {
      const first = read.tensors.find((t) => /^(float|bfloat)/.test(t.dtype) && t.dtype !== conv.to);
      if (!first) continue;
      names = [first.name];
    }
    let report: Awaited<ReturnType<typeof convertFile>> | undefined;
    ops[key] = await attempt(key, async () => {
      report = await convertFile(c.path, out, { to: conv.to, names, includeIntegers: c.index % 2 === 0, chunkBytes: 64 + (c.index % 5) * 8 });
    });
    const left = leftovers(dir);
    if (left.length > 0) problems.push(`corrupt output: ${key} left ${left.join(", ")}`);
    if (!report) {
      if (existsSync(out)) problems.push(`corrupt output: ${key} failed (${ops[key]}) but ${conv.out} exists`);
      continue;
    }
    if (!read) {
      problems.push(`inconsistent: ${key} succeeded on a file openTensorFile refuses (${ops.open})`);
      continue;
    }
    try {
      process.stdout.write(`O ${key}-read-back\n`);
      const back = await readAll(out);
      files.push({ path: out, format: formatOf(out), role: key, tensors: back.tensors });
      // By name through maps: a find per tensor is quadratic, minutes for the 200,000-tensor probes.
      const backByName = new Map(back.tensors.map((x) => [x.name, x]));
      const readByName = new Map(read.tensors.map((x) => [x.name, x]));
      for (const t of report.tensors) {
        const input = read.raw.get(t.name);
        const outTensor = backByName.get(t.name) ?? (back.tensors.length === 1 ? back.tensors[0] : undefined);
        if (!outTensor) {
          if (t.from !== "string" || formatOf(out) !== "onnx") problems.push(`corrupt output: ${key} has no tensor ${JSON.stringify(t.name)}`);
          continue;
        }
        if (!input) continue;
        const src = readByName.get(t.name)!;
        const expected = t.converted
          ? cast(Tensor.fromBytes(input, src.dtype, src.shape), t.to, { saturate: true }).bytes()
          : input;
        if (outTensor.dtype !== t.to || String(outTensor.shape) !== String(src.shape) || outTensor.data !== digest(expected)) {
          problems.push(`corrupt output: ${key} tensor ${JSON.stringify(t.name)} reads back as ${outTensor.dtype} [${outTensor.shape}], not Cast's ${t.to} [${src.shape}] values`);
        }
      }
    } catch (e) {
      problems.push(`corrupt output: ${key} wrote ${conv.out}, which reads back as ${outcomeOf(e)}`);
    }
  }
  return { index, ops, problems, files, rss: process.memoryUsage().rss, ms: Math.round(performance.now() - started) };
}

async function mainLoop(): Promise<void> {
  const [manifestPath, from, to] = process.argv.slice(2);
  const m = JSON.parse(readFileSync(manifestPath, "utf8")) as Manifest;
  for (let i = Number(from); i < Number(to); i++) {
    process.stdout.write(`S ${i}\n`);
    const r = await runCase(m, i);
    process.stdout.write(`R ${JSON.stringify(r)}\n`);
  }
}

await mainLoop();
