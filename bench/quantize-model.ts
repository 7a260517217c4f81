/**
 * `npm run bench:quantize-model`: `tensorcast quantize` on big float32 models (issue 26 point 4).
 *
 * 1. Memory: a 2 GiB float32 model (32 MatMul weights [4096, 4096] in a side file, generated
 *    values) to q4 by the CLI, under /usr/bin/time: wall time and peak resident memory (target:
 *    below 400 MiB; the whole model is never in memory, see src/node/quantize/streamed.ts).
 * 2. Speed: a 512 MiB float32 model, its weights in a side file (16 MatMul weights, [2048, 4096]
 *    and [4096, 2048] in turn; every output fits inline), by the CLI in the same run, the commands taking turns --reps times:
 *    `convert --to float16`, `quantize --mode q4`, `quantize --mode int8`; min and median wall
 *    time, and each quantize mode's ratio to convert's (target: within 2x).
 *
 * Arguments: --reps R (default 3), --skip-memory, --skip-speed, --keep DIR (write there, keep it).
 * Needs `npm run build` (the CLI runs from dist/) and about 3.5 GiB of disk.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync, statSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeChain } from "../test/node/quantize-model-streamed.js";

const CLI = fileURLToPath(new URL("../../bin/tensorcast.js", import.meta.url));
const MiB = 2 ** 20;
const GiB = 2 ** 30;

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const reps = Number(arg("--reps") ?? 3);

interface Timed {
  seconds: number;
  peakMiB: number;
  status: number | null;
  stderr: string;
}

/** `argv` under /usr/bin/time: wall seconds and peak resident memory of that process. */
function timed(argv: string[]): Timed {
  const r = spawnSync("/usr/bin/time", ["-f", "TIME %e %M", ...argv], { encoding: "utf8", maxBuffer: 64 * MiB });
  const m = /TIME ([\d.]+) (\d+)\s*$/.exec(r.stderr);
  return { seconds: m ? Number(m[1]) : NaN, peakMiB: m ? Number(m[2]) / 1024 : NaN, status: r.status, stderr: r.stderr };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const size = (p: string): number => statSync(p).size;

const keep = arg("--keep");
const dir = keep ?? mkdtempSync(join(tmpdir(), "tensorcast-qbench-"));
const free = statfsSync(dir).bavail * statfsSync(dir).bsize;
if (free < 3.5 * GiB) {
  console.log(`skipped: ${dir} has ${(free / GiB).toFixed(1)} GiB free; this needs 3.5 GiB`);
  process.exit(0);
}
console.log(`# Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), load ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
try {
  if (!process.argv.includes("--skip-memory")) {
    const t0 = performance.now();
    const big = writeChain(dir, "big", Array.from({ length: 32 }, () => [4096, 4096] as const), true);
    console.log(`# big.onnx + big.data: ${((size(big) + size(join(dir, "big.data"))) / GiB).toFixed(3)} GiB float32, written in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const out = join(dir, "big_q4.onnx");
    const t = timed([process.execPath, CLI, "quantize", big, "--mode", "q4", "-o", out, "--force"]);
    if (t.status !== 0) throw new Error(`quantize --mode q4 failed: ${t.stderr.slice(-500)}`);
    console.log("| 2 GiB float32 model (side file) | wall s | peak RSS MiB | output |\n|---|---:|---:|---|");
    console.log(`| quantize --mode q4 | ${t.seconds.toFixed(1)} | ${t.peakMiB.toFixed(0)} | ${(size(out) / MiB).toFixed(0)} MiB inline |`);
    rmSync(join(dir, "big.data"));
    rmSync(out);
  }
  if (!process.argv.includes("--skip-speed")) {
    const shapes = Array.from({ length: 16 }, (_, l) => (l % 2 === 0 ? [2048, 4096] : [4096, 2048]) as [number, number]);
    const model = writeChain(dir, "mid", shapes, true);
    console.log(`# mid.onnx + mid.data: ${((size(model) + size(join(dir, "mid.data"))) / MiB).toFixed(0)} MiB float32 (side file), ${shapes.length} MatMul weights`);
    const commands: [string, string[]][] = [
      ["convert --to float16", ["convert", model, "--to", "float16", "-o", join(dir, "mid_fp16.onnx"), "--force"]],
      ["quantize --mode q4", ["quantize", model, "--mode", "q4", "-o", join(dir, "mid_q4.onnx"), "--force"]],
      ["quantize --mode int8", ["quantize", model, "--mode", "int8", "-o", join(dir, "mid_int8.onnx"), "--force"]],
    ];
    const runs = commands.map(() => [] as Timed[]);
    for (let r = 0; r < reps; r++) {
      commands.forEach(([label, argv], k) => {
        const t = timed([process.execPath, CLI, ...argv]);
        if (t.status !== 0) throw new Error(`${label} failed: ${t.stderr.slice(-500)}`);
        runs[k].push(t);
      });
    }
    const base = median(runs[0].map((t) => t.seconds));
    console.log(`| 512 MiB float32 model, ${reps} runs each | min s | median s | median / convert | peak RSS MiB | output MiB |\n|---|---:|---:|---:|---:|---:|`);
    commands.forEach(([label, argv], k) => {
      const s = runs[k].map((t) => t.seconds);
      const out = argv[argv.indexOf("-o") + 1];
      console.log(`| ${label} | ${Math.min(...s).toFixed(2)} | ${median(s).toFixed(2)} | ${(median(s) / base).toFixed(2)} | ${Math.max(...runs[k].map((t) => t.peakMiB)).toFixed(0)} | ${(size(out) / MiB).toFixed(0)} |`);
    });
  }
} finally {
  if (!keep) rmSync(dir, { recursive: true, force: true });
}
