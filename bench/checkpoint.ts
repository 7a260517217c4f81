/**
 * The checkpoint target of issue 16: `tensorcast convert in.safetensors --to bfloat16` on a 1 GiB
 * float32 file against `cp` of the same file on the same disk, and the converter's peak memory.
 * Not a test: it prints a table (docs/performance.md quotes it).
 *
 *   npm run bench:checkpoint -- [--dir /tmp] [--tensors 8] [--tensor-mib 128] [--reps 3]
 *     [--node /work/rt/n24/package/bin/node] [--cli path/to/bin/tensorcast.js] [--cold]
 *     [--jobs 0,2] [--before path/to/other/bin/tensorcast.js] [--breakdown] [--keep]
 *
 * One file of `--tensors` float32 tensors of `--tensor-mib` each (values like a model's weights:
 * uniform in +/-0.02) is generated in `--dir`. Then, `--reps` times and in turn: `cp IN OUT`,
 * `cp IN OUT && sync OUT` (cp does not flush; the converter flushes its output before renaming
 * it, so this is the like-for-like copy), `cat IN > OUT` (also an in-kernel copy_file_range), `dd
 * bs=4M conv=fsync` and bench/copy-floor.ts (a Node loop of 4 MiB reads and writes, flushed and
 * renamed like the converter's output; once copying everything, once writing half of each chunk:
 * the converter's own I/O with nothing converted, the "floor" column's reference), and the converter once per `--jobs` value (each followed by `--before`'s, another checkout's CLI, with the same value, for a before / after comparison in one run), each as its
 * own process under /usr/bin/time -v, after a `sync` (untimed) so that no run pays for the
 * writeback of the generated input or of an earlier run, (wall time, CPU time, peak resident memory), OUT removed
 * between runs and not timed. `--cold` drops the page cache before every run (needs root and a
 * writable /proc/sys/vm/drop_caches; said in the header whether it worked). Min and median wall
 * time per contender, and each one's ratio to cp's.
 *
 * `--breakdown` first times the converter's stages in this process on the same file, one after
 * the other (each stage alone, so what overlaps in a real run is counted in each), wall and CPU
 * time: reading every chunk into one reused buffer, cast() of each chunk (a fresh output) and
 * castInto a reused one, the statistics of each chunk, writing the output, flushing it, and
 * reading it back whole (what a digest check of every byte would add; the converter's own check
 * re-reads the header only, docs/performance.md).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cast, castInto, Tensor } from "../src/index.js";
import { AtomicOutput, RandomAccessFile } from "../src/node/io/file.js";
import { ResidentChunks } from "../src/node/convert/cast-tally.js";
import { convertChunk, measureConversion } from "../src/node/convert/kernel.js";

const args = process.argv.slice(2);
const option = (name: string, fallback: string): string => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const tensors = Number(option("--tensors", "8"));
const tensorMiB = Number(option("--tensor-mib", "128"));
const reps = Number(option("--reps", "3"));
const node = option("--node", process.execPath);
const cliPath = option("--cli", fileURLToPath(new URL("../../bin/tensorcast.js", import.meta.url)));
const jobsList = option("--jobs", "default").split(",");
const before = option("--before", "");
const copyFloor = fileURLToPath(new URL("./copy-floor.js", import.meta.url));
const cold = args.includes("--cold");
const dir = mkdtempSync(join(option("--dir", tmpdir()), "tensorcast-checkpoint-"));
const input = join(dir, "in.safetensors");
const output = join(dir, "out.safetensors");

/** A safetensors file of float32 tensors [rows, 4096] of `tensorMiB` each, written 16 MiB at a time. */
function generate(): void {
  const bytes = tensorMiB * 1024 * 1024;
  const header: Record<string, unknown> = {};
  for (let i = 0; i < tensors; i++) {
    header[`model.layers.${i}.mlp.weight`] = { dtype: "F32", shape: [bytes / 4 / 4096, 4096], data_offsets: [i * bytes, (i + 1) * bytes] };
  }
  let json = JSON.stringify(header);
  // Padded so the data starts on 8 bytes, as the Rust writer pads.
  json += " ".repeat((8 - ((8 + json.length) % 8)) % 8);
  const fd = openSync(input, "w");
  try {
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(BigInt(json.length));
    writeSync(fd, length);
    writeSync(fd, Buffer.from(json));
    const block = new Float32Array(4 * 1024 * 1024);
    let s = 0x2545f491;
    for (let done = 0; done < tensors * bytes; done += block.byteLength) {
      for (let j = 0; j < block.length; j++) {
        s ^= s << 13;
        s ^= s >>> 17;
        s ^= s << 5;
        block[j] = ((s >>> 0) / 4294967296 - 0.5) * 0.04;
      }
      writeSync(fd, new Uint8Array(block.buffer));
    }
  } finally {
    closeSync(fd);
  }
}

function dropCaches(): boolean {
  try {
    execFileSync("sync");
    writeFileSync("/proc/sys/vm/drop_caches", "3\n");
    return true;
  } catch {
    return false;
  }
}

interface Run {
  seconds: number;
  cpu: number;
  peakMiB: number;
}

function timed(command: string, argv: string[]): Run {
  const log = join(dir, "time.txt");
  const r = spawnSync("/usr/bin/time", ["-v", "-o", log, command, ...argv], { stdio: ["ignore", "ignore", "pipe"] });
  if (r.status !== 0) throw new Error(`${command} ${argv.join(" ")} failed (${r.status}): ${r.stderr}`);
  const report = readFileSync(log, "utf8");
  const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)/.exec(report);
  const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(report);
  const user = /User time \(seconds\): ([\d.]+)/.exec(report);
  const system = /System time \(seconds\): ([\d.]+)/.exec(report);
  if (!wall || !rss || !user || !system) throw new Error(`no /usr/bin/time report for ${command}:\n${report}`);
  return {
    seconds: Number(wall[1] ?? 0) * 3600 + Number(wall[2]) * 60 + Number(wall[3]),
    cpu: Number(user[1]) + Number(system[1]),
    peakMiB: Number(rss[1]) / 1024,
  };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** The converter's stages, each timed alone in this process (see the file comment). */
async function breakdown(): Promise<[string, number, number][]> {
  const chunk = 4 * 1024 * 1024;
  const file = await RandomAccessFile.open(input);
  const dataStart = file.size - tensors * tensorMiB * 1024 * 1024;
  // Wall time and this process's CPU time (every thread: libuv's file system threads included).
  const times: [string, number, number][] = [];
  const time = async (what: string, f: () => Promise<void> | void): Promise<void> => {
    // What the previous stage left (256 cast() outputs: 512 MiB of ArrayBuffers) is freed here,
    // not during the next stage (it was once a second of system time counted as writing).
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) throw new Error("--breakdown needs node --expose-gc");
    gc();
    execFileSync("sync");
    await new Promise((r) => setTimeout(r, 500));
    const t = performance.now();
    const c = process.cpuUsage();
    await f();
    const used = process.cpuUsage(c);
    times.push([what, (performance.now() - t) / 1000, (used.user + used.system) / 1e6]);
  };
  const buffer = new Uint8Array(chunk);
  const out = Tensor.zeros("bfloat16", [chunk / 4]);
  await time("read 4 MiB chunks into one buffer", async () => {
    for (let at = dataStart; at < file.size; at += chunk) await file.read(at, chunk, buffer);
  });
  const x = Tensor.fromBytes(buffer, "float32", [chunk / 4]);
  const chunks = (file.size - dataStart) / chunk;
  await time("cast() a chunk (fresh output)", () => {
    for (let i = 0; i < chunks; i++) cast(x, "bfloat16");
  });
  await time("castInto a reused output", () => {
    for (let i = 0; i < chunks; i++) castInto(x, out);
  });
  await time("statistics of a chunk (measureConversion)", () => {
    for (let i = 0; i < chunks; i++) measureConversion(x, out);
  });
  // The scalar float32 loop the SIMD pass replaced (same numbers), for a before / after in one run.
  await time("statistics, scalar float32 loop (before)", () => {
    for (let i = 0; i < chunks; i++) measureConversion(x, out, "float32");
  });
  // What the converter runs per chunk: castInto and the statistics apart (the SIMD tally copying
  // the block into its scratch blocks), and fused in one memory (cast-tally.ts, convertChunk).
  await time("castInto + statistics, apart", () => {
    for (let i = 0; i < chunks; i++) {
      castInto(x, out);
      measureConversion(x, out);
    }
  });
  const outBytes = out.bytes();
  await time("castInto + statistics, one memory (convertChunk)", () => {
    for (let i = 0; i < chunks; i++) convertChunk(buffer, "float32", "bfloat16", chunk / 4, true, "raw", outBytes);
  });
  // As the converter without workers runs it: the chunk read into WebAssembly memory and
  // converted there (ResidentChunks), nothing copied.
  const slots = new ResidentChunks(chunk, 2);
  const residentIn = slots.take(chunk);
  const residentOut = slots.take(chunk / 2);
  if (residentIn && residentOut) {
    residentIn.set(buffer);
    await time("castInto + statistics, in place (resident chunks)", () => {
      for (let i = 0; i < chunks; i++) convertChunk(residentIn, "float32", "bfloat16", chunk / 4, true, "raw", residentOut);
    });
  }
  await file.close();
  const target = await AtomicOutput.create(output);
  const written = out.bytes();
  await time("write the output (page cache)", async () => {
    for (let i = 0; i < chunks; i++) await target.write(written, i * written.length);
  });
  await time("flush it (fsync)", () => target.finish(chunks * written.length));
  await time("read it back (as a digest check would)", async () => {
    const back = await RandomAccessFile.open(target.temporary);
    for (let at = 0; at < back.size; at += chunk) await back.read(at, Math.min(chunk, back.size - at), buffer.subarray(0, Math.min(chunk, back.size - at)));
    await back.close();
  });
  await target.abort();
  return times;
}

try {
  generate();
  execFileSync("sync");
  const size = statSync(input).size;
  const drops = cold ? dropCaches() : false;
  const header =
    `${tensors} x ${tensorMiB} MiB float32 (${(size / 2 ** 30).toFixed(2)} GiB) -> bfloat16 in ${dir}; ${node} (${execFileSync(node, ["--version"]).toString().trim()}); ` +
    `${cpus().length} x ${cpus()[0]?.model.trim()}; page cache ${cold ? (drops ? "dropped before every run" : "warm (drop_caches refused)") : "warm"}; ` +
    `load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`;
  console.error(header);
  if (args.includes("--breakdown")) {
    console.log("| stage, alone, on the whole file | wall | CPU (user + system) |\n| --- | --- | --- |");
    for (const [what, s, cpu] of await breakdown()) console.log(`| ${what} | ${s.toFixed(3)} s | ${cpu.toFixed(3)} s |`);
  }
  const contenders: [string, string, string[]][] = [
    ["cp", "cp", [input, output]],
    ["cp + sync", "sh", ["-c", `cp "$0" "$1" && sync "$1"`, input, output]],
    // cat copies in the kernel too (copy_file_range, coreutils 9.1); dd goes through user memory.
    ["cat > out", "sh", ["-c", `cat "$0" > "$1"`, input, output]],
    ["dd bs=4M conv=fsync", "dd", [`if=${input}`, `of=${output}`, "bs=4M", "conv=fsync", "status=none"]],
    ["node copy, 4 MiB chunks, fsync", node, [copyFloor, input, output]],
    ["node read 1 GiB, write 512 MiB, fsync", node, [copyFloor, input, output, "--half"]],
    // With --before, the other checkout's CLI right after this one's for each --jobs value, so
    // that each pair is like for like and runs back to back.
    ...jobsList.flatMap((j): [string, string, string[]][] => {
      const flags = ["--quiet", ...(j === "default" ? [] : ["--jobs", j])];
      const name = `tensorcast convert${j === "default" ? "" : ` --jobs ${j}`}`;
      const mine: [string, string, string[]] = [name, node, [cliPath, "convert", input, "--to", "bfloat16", "-o", output, ...flags]];
      return before ? [mine, [`before: ${name}`, node, [before, "convert", input, "--to", "bfloat16", "-o", output, ...flags]]] : [mine];
    }),
  ];
  const runs = new Map<string, Run[]>(contenders.map(([name]) => [name, []]));
  for (let r = 0; r < reps; r++) {
    // Every other round in the reverse order, so that no contender always follows the same one.
    for (const [name, command, argv] of r % 2 === 0 ? contenders : [...contenders].reverse()) {
      // Dirty pages of the generated input or of an earlier run being written back make every
      // write(2) meanwhile about 10x costlier in system time (measured: 512 MiB written right
      // after a 1 GiB file took 1.15 s of CPU instead of 0.1 s); each run starts with none.
      execFileSync("sync");
      if (cold) dropCaches();
      const run = timed(command, argv);
      rmSync(output, { force: true });
      runs.get(name)!.push(run);
      console.error(`${name}: ${run.seconds.toFixed(2)} s, CPU ${run.cpu.toFixed(2)} s, peak ${run.peakMiB.toFixed(0)} MiB`);
    }
  }
  // --reps 0: the breakdown alone.
  const cp = reps === 0 ? NaN : Math.min(...runs.get("cp")!.map((r) => r.seconds));
  const cpMedian = median(runs.get("cp")!.map((r) => r.seconds));
  console.log(`\n<!-- ${header}; load average at the end ${loadavg().map((l) => l.toFixed(2)).join(" ")} -->`);
  // The converter's own I/O with nothing converted: the floor a converter can reach.
  const floorRuns = runs.get("node read 1 GiB, write 512 MiB, fsync")!.map((r) => r.seconds);
  const floor = Math.min(...floorRuns);
  const floorMedian = median(floorRuns);
  console.log("| contender | wall min | wall median | / cp (min, median) | / floor (min, median) | CPU median (user + system) | peak RSS (max) |");
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const [name] of reps === 0 ? [] : contenders) {
    const rs = runs.get(name)!;
    const min = Math.min(...rs.map((r) => r.seconds));
    const med = median(rs.map((r) => r.seconds));
    console.log(
      `| ${name} | ${min.toFixed(2)} s | ${med.toFixed(2)} s | ${(min / cp).toFixed(2)}x, ${(med / cpMedian).toFixed(2)}x | ` +
        `${(min / floor).toFixed(2)}x, ${(med / floorMedian).toFixed(2)}x | ` +
        `${median(rs.map((r) => r.cpu)).toFixed(2)} s | ${Math.max(...rs.map((r) => r.peakMiB)).toFixed(0)} MiB |`,
    );
  }
} finally {
  if (!args.includes("--keep")) rmSync(dir, { recursive: true, force: true });
}
