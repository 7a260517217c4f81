/**
 * Huge headers (issue 13, defect 4): time and peak memory of `inspect`, `diff` and `convert` on
 * safetensors files of a million empty tensors and on an ONNX model of 200,000 one-element
 * initializers. Not a test: it prints a table (docs/convert.md quotes it).
 *
 *   npm run build && npx tsc -p tsconfig.test.json && node build/bench/headers.js \
 *     [--tensors 1000000] [--initializers 200000] [--dir /tmp] [--cli path/to/bin/tensorcast.js]
 *
 * `--cli` runs another checkout's CLI on the same files (a before / after comparison).
 * Two files are generated:
 * - "map": the form writers use, `"t0000000":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`,
 *   60 bytes a tensor (the 59 MB header);
 * - "list": the shortest form the Rust reader accepts, `"t0000000":["F32",[0],[0,0]]`, 27 bytes a
 *   tensor, so the most tensors per byte of header.
 * and one model: "onnx", 200,000 float32[1] initializers in raw_data (17 to 25 bytes each), which
 * `convert` writes to safetensors (an .onnx output would need the graph rewritten).
 * Each command runs as its own process under /usr/bin/time -v (wall time, CPU time, peak resident
 * memory of the whole process), with its output sent to /dev/null. On a shared machine the CPU time
 * says more than the wall time.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { WireWriter } from "../src/io/onnx/wire-writer.js";

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const count = Number(option("--tensors", "1000000"));
const initializers = Number(option("--initializers", "200000"));
const dir = mkdtempSync(join(option("--dir", tmpdir()), "tensorcast-headers-"));
const cliPath = option("--cli", fileURLToPath(new URL("../../bin/tensorcast.js", import.meta.url)));

function write(name: string, entry: (name: string) => string): string {
  const parts: string[] = [];
  for (let i = 0; i < count; i++) parts.push(entry(`t${String(i).padStart(7, "0")}`));
  const header = Buffer.from(`{${parts.join(",")}}`);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(header.length));
  const path = join(dir, `${name}.safetensors`);
  writeFileSync(path, Buffer.concat([length, header]));
  return path;
}

/** A ModelProto (ir_version 8, opset 17) whose graph holds `n` float32[1] initializers. */
function writeModel(n: number): string {
  const graph = new WireWriter().stringField(2, "g");
  const value = new Uint8Array(new Float32Array([1.5]).buffer);
  for (let i = 0; i < n; i++) {
    graph.fork(5).int64Field(1, 1).uint32Field(2, 1).stringField(8, `t${i}`).bytesField(9, value).join();
  }
  const model = new WireWriter().uint32Field(1, 8);
  model.fork(8).stringField(1, "").uint32Field(2, 17).join();
  model.bytesField(7, graph.finish());
  const path = join(dir, "model.onnx");
  writeFileSync(path, model.finish());
  return path;
}

function timed(argv: string[]): { seconds: number; cpu: number; peakMiB: number } {
  const log = join(dir, "time.txt");
  try {
    // stdout "ignore" is /dev/null: the report is made and written, then thrown away.
    execFileSync("/usr/bin/time", ["-v", "-o", log, "node", cliPath, ...argv], { stdio: ["ignore", "ignore", "pipe"] });
  } catch (e) {
    throw new Error(`${argv.join(" ")} failed: ${String((e as { stderr?: Buffer }).stderr ?? e)}`);
  }
  const report = readFileSync(log, "utf8");
  const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)/.exec(report);
  const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(report);
  const user = /User time \(seconds\): ([\d.]+)/.exec(report);
  const system = /System time \(seconds\): ([\d.]+)/.exec(report);
  if (!wall || !rss || !user || !system) throw new Error(`no /usr/bin/time report for ${argv.join(" ")}:\n${report}`);
  return {
    seconds: Number(wall[1] ?? 0) * 3600 + Number(wall[2]) * 60 + Number(wall[3]),
    cpu: Number(user[1]) + Number(system[1]),
    peakMiB: Number(rss[1]) / 1024,
  };
}

try {
  const files = {
    map: write("map", (n) => `"${n}":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}`),
    list: write("list", (n) => `"${n}":["F32",[0],[0,0]]`),
    onnx: writeModel(initializers),
  };
  const rows: string[][] = [];
  for (const [form, path] of Object.entries(files)) {
    const mb = (statSync(path).size / 1e6).toFixed(1);
    const out = join(dir, `${form}.out.safetensors`);
    for (const [what, argv] of [
      ["inspect", ["inspect", path]],
      ["inspect --json", ["inspect", "--json", path]],
      ["diff (with itself)", ["diff", path, path]],
      ["convert --to bfloat16", ["convert", path, "--to", "bfloat16", "-o", out, "--force"]],
    ] as const) {
      const t = timed([...argv]);
      rows.push([`${form} (${mb} MB)`, what, `${t.seconds.toFixed(1)} s`, `${t.cpu.toFixed(1)} s`, `${t.peakMiB.toFixed(0)} MiB`]);
      console.error(rows.at(-1)!.join("  "));
    }
  }
  console.log(`\n${cliPath}: ${count} empty tensors per safetensors file, ${initializers} initializers in the model\n`);
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(1)).join(" ")} (${cpus().length} cores)`);
  console.log("| header | command | wall time | CPU time (user + system) | peak RSS |\n| --- | --- | --- | --- | --- |");
  for (const r of rows) console.log(`| ${r.join(" | ")} |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
