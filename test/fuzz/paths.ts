/**
 * Fuzz classes for issue 24's data-loss points, run by fuzz.test.ts (the library in this process,
 * a sample through the real CLI):
 *
 * - "output-path collisions with input files": OUT, --external-data, a slice's files, a folder
 *   --force would replace, or an index, that is one of the input's files (the model, its external
 *   data file, a shard, the index or config.json of an input folder, the input folder), spelled
 *   directly, through ./ or sub/.., a hard link, a symbolic link, a linked folder or a trailing
 *   slash; with or without --force; whole-model, --initializers and every output format. About one
 *   case in seven names a fresh path instead (a control, which may be accepted).
 * - "look-alike temporary entries": beside OUT (or its side file, or OUTDIR), entries named like a
 *   killed run's temporary that are not ours to remove: folders (empty or not), FIFOs, sockets, a
 *   character device (as root), symbolic links (to a file, to the input, to a folder, to nothing),
 *   files of a live process, foreign names, and the input itself so named; with 0 to 2 genuine
 *   stale temporaries, which must go.
 *
 * Each case is built in a folder of its own. A loss is any input file, alias or look-alike entry
 * whose type, bytes, inode or link target changed, a genuine stale temporary left by a run that
 * was accepted, or a temporary the run left; wrong is a collision accepted, or refused with
 * --force but without OUTPUT_IS_INPUT; a crash is anything but a TensorcastError (library) or an
 * exit of 0, 1, 2 or 74 with an "error:" line (CLI).
 */
import { execFile, execFileSync } from "node:child_process";
import { copyFileSync, linkSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { basename, join, relative } from "node:path";
import { TensorcastError } from "../../src/index.js";
import { convertCheckpoint, convertFile, convertModelFile, indexCheckpoint, type FileFormat } from "../../src/node/index.js";
import { randomFloat32, safetensorsBytes } from "../node/helpers.js";
import { INDEX_NAME, modelWithExternalData, SHARD_NAMES, shardedCheckpoint, snapshot } from "../support/input-sets.js";
import { Rng } from "../support/rng.js";
import { ROOT } from "./seeds.js";

export interface PathRow {
  readonly name: string;
  cases: number;
  viaCli: number;
  accepted: number;
  clean: number;
  losses: number;
  crashes: number;
  wrong: number;
}

/** What a run came to. */
interface Outcome {
  kind: "accepted" | "clean" | "crash";
  /** The error code (library, or printed by the CLI), or the crash. */
  detail: string;
}

const BIN = join(ROOT, "bin", "tensorcast.js");
const pick = <T>(rng: Rng, items: readonly T[]): T => items[rng.below(items.length)];

/** A pid no process has: above the kernel's pid_max. */
function deadPid(): number {
  return Math.min(Number(readFileSync("/proc/sys/kernel/pid_max", "utf8")) + 17, 0x7ffffff0);
}

async function viaLibrary(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    await run();
    return { kind: "accepted", detail: "" };
  } catch (e) {
    if (e instanceof TensorcastError && e.code !== "INTERNAL") return { kind: "clean", detail: e.code };
    return { kind: "crash", detail: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

function viaCli(args: readonly string[]): Promise<Outcome> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args, "-q"], { timeout: 30_000, env: { ...process.env, TENSORCAST_DEBUG: "" } }, (error, _stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
      if (code === 0) return done({ kind: "accepted", detail: "" });
      const first = stderr.split("\n")[0];
      const coded = /\(code ([A-Z_]+)\)$/.exec(first);
      const usage = code === 2 && /^Run "tensorcast help/m.test(stderr);
      const lines = stderr.split("\n").filter((l) => l !== "").length;
      if ([1, 2, 74].includes(code) && first.startsWith("error: ") && (lines === 1 || (usage && lines === 2))) {
        return done({ kind: "clean", detail: coded ? coded[1] : "usage" });
      }
      done({ kind: "crash", detail: `exit ${code}${error?.signal ? ` (${error.signal})` : ""}: ${stderr.slice(0, 300)}` });
    });
  });
}

/** Temporaries left at the top of `dir` or in its subfolders (one level). */
function leftovers(dir: string, before: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (/\.tensorcast-\d+-[0-9a-f]{8}\.tmp$/.test(e.name) && !before.has(e.name)) out.push(e.name);
    if (e.isDirectory() && !e.name.startsWith(".")) {
      for (const f of readdirSync(join(dir, e.name))) if (/\.tensorcast-\d+-[0-9a-f]{8}\.tmp$/.test(f) && !before.has(`${e.name}/${f}`)) out.push(`${e.name}/${f}`);
    }
  }
  return out;
}

function tmpNames(dir: string): Set<string> {
  const names = new Set<string>();
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    names.add(e.name);
    if (e.isDirectory() && !e.name.startsWith(".")) for (const f of readdirSync(join(dir, e.name))) names.add(`${e.name}/${f}`);
  }
  return names;
}

// ---- output-path collisions with input files ------------------------------------------------------

type InputKind = "safetensors" | "npy" | "onnx" | "sharded";

/** The input of a case: its path, its files (the victims), and the folder it lives in. */
interface Input {
  kind: InputKind;
  path: string;
  files: string[];
}

async function makeInput(dir: string, kind: InputKind): Promise<Input> {
  if (kind === "safetensors") {
    const path = join(dir, "in.safetensors");
    writeFileSync(path, safetensorsBytes([{ name: "w", dtype: "float32", shape: [8, 4], bytes: randomFloat32(32, 1) }]));
    return { kind, path, files: [path] };
  }
  if (kind === "npy") {
    const path = join(dir, "in.npy");
    copyFileSync(join(ROOT, "test", "fixtures", "checkpoints", "f4.npy"), path);
    return { kind, path, files: [path] };
  }
  if (kind === "onnx") {
    const { model, data } = await modelWithExternalData(dir);
    return { kind, path: model, files: [model, data] };
  }
  const path = join(dir, "ckpt");
  shardedCheckpoint(path);
  return { kind, path, files: [path, ...[...SHARD_NAMES, INDEX_NAME, "config.json"].map((f) => join(path, f))] };
}

/** `victim` under another name of kind `form`, made in `dir` when it needs a link; the path and a relative spelling. */
function alias(dir: string, victim: string, form: string, k: number): string {
  const rel = relative(dir, victim);
  switch (form) {
    case "dot": return `${dir}/./${rel}`;
    case "dotdot": return `${dir}/sub/../${rel}`;
    case "hard": {
      const p = join(dir, `alias${k}-${rel.replace(/\//g, "_")}`);
      linkSync(victim, p);
      return p;
    }
    case "soft": {
      const p = join(dir, `alias${k}-${rel.replace(/\//g, "_")}`);
      symlinkSync(victim, p);
      return p;
    }
    case "up": return join(dir, "up", rel);
    case "slash": return `${victim}/`;
    default: return victim;
  }
}

interface CollisionCase {
  label: string;
  /** Paths whose snapshot must not change. */
  guarded: string[];
  /** Whether OUT is a fresh path (a control): accepted is fine. */
  control: boolean;
  /** Whether the refusal must be OUTPUT_IS_INPUT (with --force, where no other check comes first). */
  mustName: boolean;
  library: () => Promise<unknown>;
  cli: string[];
}

async function collisionCase(dir: string, rng: Rng, k: number): Promise<CollisionCase> {
  mkdirSync(join(dir, "sub"));
  const input = await makeInput(dir, pick(rng, ["safetensors", "npy", "onnx", "onnx", "sharded", "sharded"] as InputKind[]));
  symlinkSync(dir, join(dir, "up"));
  const force = rng.below(5) !== 0;
  const f = force ? ["--force"] : [];
  const control = rng.below(7) === 0;
  const to = "float16";
  if (input.kind !== "sharded") {
    const formForm = pick(rng, input.kind === "onnx" ? ["whole", "initializers", "safetensors", "npy", "onnx", "pb"] : ["safetensors", "npy", "pb", "onnx"]);
    const form = formForm === "whole" ? ["--output-format", "onnx"] : formForm === "initializers" ? ["--initializers", "W", "--output-format", "onnx"] : ["--output-format", formForm];
    const victim = pick(rng, input.files);
    const aliasForm = pick(rng, ["direct", "dot", "dotdot", "hard", "soft", "up"]);
    const side = input.kind === "onnx" && (formForm === "whole" || formForm === "initializers") && rng.below(3) === 0;
    // A hard link to an .onnx input's external data file makes that file one of two links: the
    // input itself is refused (INVALID_DATA, as onnx refuses it) before OUT is looked at.
    const linksSideFile = input.kind === "onnx" && aliasForm === "hard" && victim !== input.path && !control;
    const target = control ? join(dir, `fresh${k}.out`) : alias(dir, victim, aliasForm, k);
    // A control's OUT is expected to appear; a collision's alias must stay as it is.
    const guarded = control ? input.files : [...input.files, target];
    if (side) {
      const out = join(dir, "out.onnx");
      const location = relative(dir, target);
      const spelled = aliasForm === "dot" ? `./${location}` : aliasForm === "dotdot" ? `sub/../${location}` : location;
      const names = formForm === "initializers" ? ["W"] : undefined;
      return {
        label: `--external-data ${aliasForm} ${relative(dir, victim)}${force ? " --force" : ""} (${formForm})`, guarded, control,
        // "sub/.." has a ".." component, refused as such first.
        mustName: force && !control && aliasForm !== "dotdot" && !linksSideFile,
        library: () => (names ? convertFile(input.path, out, { to, names, outputFormat: "onnx", externalData: spelled, force })
          : convertModelFile(input.path, out, { to, externalData: spelled, force })),
        cli: ["convert", input.path, "--to", to, "-o", out, "--external-data", spelled, ...f, ...form],
      };
    }
    const whole = input.kind === "onnx" && (formForm === "whole" || formForm === "onnx");
    return {
      label: `-o ${control ? "fresh" : `${aliasForm} ${relative(dir, victim)}`}${force ? " --force" : ""} (${input.kind} -> ${formForm})`, guarded, control,
      mustName: force && !control && !linksSideFile,
      library: () => (whole ? convertModelFile(input.path, target, { to, force })
        : convertFile(input.path, target, { to, force, names: formForm === "initializers" ? ["W"] : undefined, outputFormat: formForm === "initializers" ? "onnx" : (formForm as FileFormat) })),
      cli: ["convert", input.path, "--to", to, "-o", target, ...f, ...form],
    };
  }
  const op = pick(rng, ["folder", "folder", "slice", "replace", "index"]);
  const shard = pick(rng, [undefined, { index: 0, count: 2 }, { index: 1, count: 2 }, { index: 0, count: 1 }]);
  const shardArgs = shard ? ["--shard", `${shard.index}/${shard.count}`] : [];
  if (op === "folder" || op === "index") {
    const target = control ? join(dir, `fresh${k}`) : alias(dir, input.path, pick(rng, ["direct", "dot", "dotdot", "soft", "up", "slash"]), k);
    const guarded = control ? [input.path] : [input.path, target];
    if (op === "index") {
      return {
        label: `index ${control ? "fresh" : "the input"} --from the input${force ? " --force" : ""}`, guarded, control, mustName: force && !control,
        library: () => indexCheckpoint(target, { from: input.path, force }),
        cli: ["index", target, "--from", input.path, ...f],
      };
    }
    return {
      label: `-o ${control ? "fresh" : "the input folder"} ${shardArgs.join(" ")}${force ? " --force" : ""}`, guarded, control, mustName: !control,
      library: () => convertCheckpoint(input.path, target, { to, force, shard }),
      cli: ["convert", input.path, "--to", to, "-o", target, ...f, ...shardArgs],
    };
  }
  // A folder holding links to the input's files under the names a conversion writes.
  const out = join(dir, op === "slice" ? "slice" : "blobs");
  mkdirSync(out);
  const victim = pick(rng, input.files.slice(1));
  const name = pick(rng, [...SHARD_NAMES, "config.json", INDEX_NAME]);
  const linked = join(out, name);
  const hard = !control && rng.below(2) === 0;
  if (!control) (hard ? linkSync : symlinkSync)(victim, linked);
  else writeFileSync(linked, "an earlier output");
  if (op === "replace" && name !== INDEX_NAME) writeFileSync(join(out, INDEX_NAME), "{}");
  const s = op === "slice" ? (shard ?? { index: 0, count: 1 }) : undefined;
  // What the conversion writes there: a slice its shards (slice 0 also config.json); a whole
  // conversion replaces the folder, which --force allows only for regular files (a hard link).
  // A hard link to the input's config.json gives it two links: it is left out of the copy (issue 24
  // point 8), so a slice writes no config.json at all.
  const configCopied = !(hard && basename(victim) === "config.json");
  const written = s ? [...SHARD_NAMES.filter((_, i) => i % s.count === s.index), ...(s.index === 0 && configCopied ? ["config.json"] : [])] : [name];
  const collides = !control && written.includes(name);
  return {
    label: `${op} folder with ${name} -> ${control ? "nothing" : relative(dir, victim)}${s ? ` --shard ${s.index}/${s.count}` : ""}${force ? " --force" : ""}`,
    guarded: control ? [input.path] : [input.path, linked], control: !collides,
    // A slice refuses an input's file before looking at --force; a folder to replace holding a link is refused as such first.
    mustName: collides && s !== undefined,
    library: () => convertCheckpoint(input.path, out, { to, force, shard: s }),
    cli: ["convert", input.path, "--to", to, "-o", out, ...f, ...(s ? ["--shard", `${s.index}/${s.count}`] : [])],
  };
}

// ---- look-alike temporary entries -----------------------------------------------------------------

const LOOK_ALIKES = [
  "dir-empty", "dir-full", "fifo", "socket", "link-file", "link-input", "link-dir", "link-nothing", "live-pid", "own-pid",
  "short-hex", "upper-hex", "long-hex", "zero-pid", "huge-pid", "suffix", "no-dot", "other-name", "chardev",
] as const;

interface LookAlikeCase {
  label: string;
  guarded: string[];
  stale: string[];
  servers: Server[];
  library: () => Promise<unknown>;
  cli: string[];
}

async function lookAlikeCase(dir: string, rng: Rng): Promise<LookAlikeCase> {
  const variant = pick(rng, ["file", "file", "side", "folder", "input-named"]);
  const pid = deadPid();
  const hex = (): string => (rng.u32() >>> 0).toString(16).padStart(8, "0");
  let input: string;
  let outName: string;
  let library: () => Promise<unknown>;
  let cli: string[];
  const guarded: string[] = [];
  if (variant === "side") {
    input = (await modelWithExternalData(dir)).model;
    outName = pick(rng, ["out.onnx", "out.onnx.data"]);
    library = () => convertFile(input, join(dir, "out.onnx"), { to: "float16", names: ["W"], externalData: "out.onnx.data" });
    cli = ["convert", input, "--to", "float16", "--initializers", "W", "-o", join(dir, "out.onnx"), "--external-data", "out.onnx.data"];
    guarded.push(input, join(dir, "in.data"));
  } else if (variant === "folder") {
    input = join(dir, "ckpt");
    shardedCheckpoint(input);
    outName = "outdir";
    library = () => convertCheckpoint(input, join(dir, "outdir"), { to: "float16" });
    cli = ["convert", input, "--to", "float16", "-o", join(dir, "outdir")];
    guarded.push(input);
  } else {
    outName = "out.safetensors";
    input = variant === "input-named" ? join(dir, `.out.safetensors.tensorcast-${pid}-${hex()}.tmp`) : join(dir, "in.safetensors");
    writeFileSync(input, safetensorsBytes([{ name: "w", dtype: "float32", shape: [8], bytes: randomFloat32(8, 5) }]));
    const inputFile = input;
    library = () => convertFile(inputFile, join(dir, "out.safetensors"), { to: "float16", inputFormat: "safetensors" });
    cli = ["convert", input, "--format", "safetensors", "--to", "float16", "-o", join(dir, "out.safetensors")];
    guarded.push(input);
  }
  const temp = (p: number | string, h = hex(), name = outName): string => join(dir, `.${name}.tensorcast-${p}-${h}.tmp`);
  const servers: Server[] = [];
  const kinds: string[] = [];
  const count = 1 + rng.below(5);
  for (let i = 0; i < count; i++) {
    let kind: string = pick(rng, LOOK_ALIKES);
    if (kind === "chardev" && process.getuid?.() !== 0) kind = "fifo";
    kinds.push(kind);
    let p = temp(pid);
    switch (kind) {
      case "dir-empty": mkdirSync(p); break;
      case "dir-full":
        mkdirSync(join(p, "deep"), { recursive: true });
        writeFileSync(join(p, "deep", "precious"), "precious");
        writeFileSync(join(p, SHARD_NAMES[0]), "half a shard");
        break;
      case "fifo": execFileSync("mkfifo", [p]); break;
      case "socket": {
        const server = createServer();
        await new Promise<void>((done) => server.listen(p, done));
        servers.push(server);
        break;
      }
      case "chardev": execFileSync("mknod", [p, "c", "1", "3"]); break;
      case "link-file":
        writeFileSync(join(dir, `target${i}`), "a link's target");
        guarded.push(join(dir, `target${i}`));
        symlinkSync(join(dir, `target${i}`), p);
        break;
      case "link-input": symlinkSync(input, p); break;
      case "link-dir":
        mkdirSync(join(dir, `folder${i}`));
        writeFileSync(join(dir, `folder${i}`, "f"), "inside");
        guarded.push(join(dir, `folder${i}`));
        symlinkSync(join(dir, `folder${i}`), p);
        break;
      case "link-nothing": symlinkSync(join(dir, "nowhere"), p); break;
      case "live-pid": p = temp(1); writeFileSync(p, "pid 1 is alive"); break;
      case "own-pid": p = temp(process.pid); writeFileSync(p, "this process is alive"); break;
      default: {
        p = kind === "short-hex" ? temp(pid, hex().slice(0, 5)) : kind === "upper-hex" ? temp(pid, hex().toUpperCase().replace(/^[0-9]/, "A"))
          : kind === "long-hex" ? temp(pid, `${hex()}0`) : kind === "zero-pid" ? temp(`0${pid}`) : kind === "huge-pid" ? temp(99_999_999_999)
          : kind === "suffix" ? `${temp(pid)}.bak` : kind === "no-dot" ? join(dir, `${outName}.tensorcast-${pid}-${hex()}.tmp`)
          : temp(pid, hex(), "other.safetensors");
        writeFileSync(p, "not ours");
      }
    }
    guarded.push(p);
  }
  const stale: string[] = [];
  for (let i = rng.below(3); i > 0; i--) {
    const p = temp(pid);
    writeFileSync(p, "partial");
    stale.push(p);
  }
  return { label: `${variant}: ${kinds.join(", ")}${stale.length ? ` + ${stale.length} stale` : ""}`, guarded, stale, servers, library, cli };
}

// ---- the runner ------------------------------------------------------------------------------------

/**
 * Runs `cases` cases of each class in folders under `dir` (every `cliEvery`-th through the CLI)
 * and returns a row per class and each failure, labelled.
 */
export async function fuzzPaths(dir: string, cases: number, cliCases: number): Promise<{ rows: PathRow[]; failures: string[] }> {
  const step = Math.max(1, Math.floor(cases / Math.max(1, cliCases)));
  const failures: string[] = [];
  const rows: PathRow[] = [];
  const classes = [
    { name: "output-path collisions with input files", seed: 0x24c0, make: collisionCase },
    { name: "look-alike temporary entries", seed: 0x24d0, make: lookAlikeCase },
  ];
  for (const cls of classes) {
    const row: PathRow = { name: cls.name, cases: 0, viaCli: 0, accepted: 0, clean: 0, losses: 0, crashes: 0, wrong: 0 };
    rows.push(row);
    for (let i = 0; i < cases; i++) {
      const caseDir = join(dir, `${cls.seed.toString(16)}-${i}`);
      mkdirSync(caseDir, { recursive: true });
      const rng = new Rng(cls.seed * 100_003 + i);
      const c = (await cls.make(caseDir, rng, i)) as CollisionCase & Partial<LookAlikeCase>;
      const before = new Map(c.guarded.map((p) => [p, snapshot(p)]));
      const temporaries = tmpNames(caseDir);
      const cli = i % step === 0 && row.viaCli < cliCases;
      const outcome = cli ? await viaCli(c.cli) : await viaLibrary(c.library);
      row.cases++;
      if (cli) row.viaCli++;
      // Looked at before the sockets close: closing a server unlinks its socket.
      const after = new Map(c.guarded.map((p) => [p, snapshot(p)]));
      for (const server of c.servers ?? []) server.close();
      const where = `${cls.name} case ${i} (${cli ? "cli" : "library"}: ${c.label})`;
      const fail = (what: string, detail: string): void => {
        failures.push(`${what}: ${where}: ${detail}`);
      };
      if (outcome.kind === "crash") {
        row.crashes++;
        fail("crash", outcome.detail);
      } else row[outcome.kind]++;
      let lost = false;
      for (const [p, s] of before) {
        const now = after.get(p)!;
        if (now !== s) {
          lost = true;
          fail("loss", `${relative(caseDir, p)} was ${s.slice(0, 80)}, is ${now.slice(0, 80)}`);
        }
      }
      if (outcome.kind === "accepted") for (const s of c.stale ?? []) if (snapshot(s) !== "missing") fail("loss", `the stale temporary ${relative(caseDir, s)} was left`);
      const left = leftovers(caseDir, temporaries);
      if (left.length > 0) {
        lost = true;
        fail("loss", `left ${left.join(", ")}`);
      }
      if (lost) row.losses++;
      if (c.control === false && outcome.kind === "accepted") {
        row.wrong++;
        fail("wrong", "a collision was accepted");
      } else if (c.mustName && outcome.kind === "clean" && outcome.detail !== "OUTPUT_IS_INPUT") {
        row.wrong++;
        fail("wrong", `refused as ${outcome.detail}, not OUTPUT_IS_INPUT`);
      }
    }
  }
  return { rows, failures };
}

/** The rows as a table. */
export function pathTable(rows: readonly PathRow[]): string {
  const header = ["class", "cases", "via CLI", "accepted", "clean errors", "losses", "crashes", "wrong verdicts"];
  const lines = [header, ...rows.map((r) => [r.name, r.cases, r.viaCli, r.accepted, r.clean, r.losses, r.crashes, r.wrong].map(String))];
  const widths = header.map((_, i) => Math.max(...lines.map((l) => l[i].length)));
  return lines.map((l) => l.map((x, i) => (i === 0 ? x.padEnd(widths[i]) : x.padStart(widths[i]))).join("  ")).join("\n");
}
