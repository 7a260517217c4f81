/**
 * Issue 24, data loss: an input's own files are never an output, and stale temporaries are only
 * ever our own regular files.
 *
 * - OUT, its side file, a slice's shards and an index are refused (OUTPUT_IS_INPUT, exit 2, with or
 *   without --force) when they are the input model, one of its external data files, or a shard,
 *   the index or a copied file of an input folder: by path, and as the same file under another
 *   name (a hard link, a symbolic link, a path through a linked folder). The library refuses as
 *   the CLI does.
 * - The clean-up of a killed run's `.OUT.tensorcast-PID-XXXXXXXX.tmp` removes only a regular file
 *   of exactly that name whose process is gone: a directory (even non-empty), a FIFO, a socket, a
 *   device, a symbolic link, a live process's file, a look-alike name and an input file so named
 *   are left alone.
 * - Two writers to one OUT: the second gets IO_ERROR (exit 74), not a bad-option code.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { linkSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { convertCheckpoint, convertFile, convertModelFile, indexCheckpoint } from "../../src/node/index.js";
import { removeStaleTemporaries } from "../../src/node/io/file.js";
import { InputFiles } from "../../src/node/io/input-files.js";
import { INDEX_NAME, modelWithExternalData, SHARD_NAMES, shardedCheckpoint, snapshot } from "../support/input-sets.js";
import { cli, randomFloat32, rejectsCode, safetensorsBytes, scratch } from "./helpers.js";

const root = scratch();
let serial = 0;
const fresh = (): string => {
  const d = join(root, `case-${serial++}`);
  mkdirSync(d);
  return d;
};
const CODED = /^error: .*; tensorcast never overwrites its input, even with --force \(code OUTPUT_IS_INPUT\)\n$/;

/** Every file under `dir`, as snapshot() sees it. */
const tree = (dir: string): string => snapshot(dir);

test("OUT that is the model's external data file is refused, whatever the output format, the alias or --force", async () => {
  const dir = fresh();
  const { model, data } = await modelWithExternalData(dir);
  mkdirSync(join(dir, "sub"));
  symlinkSync(dir, join(dir, "sub", "up"));
  symlinkSync("in.data", join(dir, "soft.data"));
  // A hard link to in.data is not among the aliases: it makes in.data a file of two links, which
  // the input check refuses before OUT is looked at (INVALID_DATA, exit 1; checked below).
  const aliases = [data, `${dir}/sub/../in.data`, `${dir}//./in.data`, join(dir, "sub", "up", "in.data"), join(dir, "soft.data")];
  const forms: string[][] = [
    [], // whole-model conversion
    ["--initializers", "W"],
    ["--initializers", "W", "--output-format", "onnx"],
    ["--output-format", "safetensors"],
    ["--initializers", "W", "--output-format", "npy"],
    ["--initializers", "W", "--output-format", "pb"],
  ];
  const before = tree(dir);
  for (const out of aliases) {
    for (const form of forms) {
      const r = await cli(["convert", model, "--to", "float16", "-o", out, "--force", ...form]);
      assert.equal(r.code, 2, `${out} ${form.join(" ")}: ${r.err}`);
      assert.match(r.err, CODED);
      assert.match(r.err, /is .*in\.onnx's own external data file in\.data/);
      assert.equal(tree(dir), before, `${out} ${form.join(" ")}: a file changed`);
    }
    await rejectsCode(convertFile(model, out, { to: "float16", names: ["W"], force: true }), "OUTPUT_IS_INPUT", /in\.onnx's own external data file in\.data/);
    await rejectsCode(convertFile(model, out, { to: "float16", outputFormat: "safetensors", force: true }), "OUTPUT_IS_INPUT");
    await rejectsCode(convertModelFile(model, out, { to: "float16", force: true }), "OUTPUT_IS_INPUT", /in\.onnx's own external data file in\.data/);
    assert.equal(tree(dir), before);
  }
  // A hard link to the side file: the input is refused as a whole, nothing is written.
  linkSync(data, join(dir, "hard.data"));
  const linked = tree(dir);
  for (const out of [data, join(dir, "hard.data")]) {
    const r = await cli(["convert", model, "--to", "float16", "-o", out, "--force"]);
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /has 2 hard links.*\(code INVALID_DATA\)\n$/);
    assert.equal(tree(dir), linked);
  }
  // The model itself, through a hard link or a linked folder.
  linkSync(model, join(dir, "hard.onnx"));
  const after = tree(dir);
  for (const out of [join(dir, "hard.onnx"), join(dir, "sub", "up", "in.onnx")]) {
    const r = await cli(["convert", model, "--to", "float16", "-o", out, "--force"]);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /is the input file; tensorcast never overwrites its input \(code OUTPUT_IS_INPUT\)\n$/);
    assert.equal(tree(dir), after);
  }
});

test("--external-data naming the input's own side file (or the input) is OUTPUT_IS_INPUT, exit 2, even with --force", async () => {
  const dir = fresh();
  const { model } = await modelWithExternalData(dir);
  symlinkSync("in.data", join(dir, "soft.data"));
  const before = tree(dir);
  for (const side of ["in.data", "./in.data", "soft.data", "in.onnx"]) {
    for (const form of [[], ["--initializers", "W"]]) {
      const r = await cli(["convert", model, "--to", "float16", "-o", join(dir, "out.onnx"), "--external-data", side, "--force", ...form]);
      assert.equal(r.code, 2, `${side}: ${r.err}`);
      assert.match(r.err, /\(code OUTPUT_IS_INPUT\)\n$/, side);
      assert.equal(tree(dir), before, side);
    }
    await rejectsCode(convertFile(model, join(dir, "out.onnx"), { to: "float16", names: ["W"], externalData: side, force: true }), "OUTPUT_IS_INPUT");
    await rejectsCode(convertModelFile(model, join(dir, "out.onnx"), { to: "float16", externalData: side, force: true }), "OUTPUT_IS_INPUT");
  }
  assert.equal(tree(dir), before);
});

test("a sharded input folder: -o onto it with --shard, a slice file or a replaced folder that is an input file, index --from itself", async () => {
  const dir = fresh();
  const input = join(dir, "ckpt");
  shardedCheckpoint(input);
  symlinkSync(input, join(dir, "alias"));
  const before = tree(dir);
  const inputBefore = tree(input);
  for (const out of [input, `${input}/`, join(dir, "alias"), join(dir, "alias/")]) {
    for (const shard of [["--shard", "0/2"], ["--shard", "1/2"], []]) {
      const r = await cli(["convert", input, "--to", "float16", "-o", out, "--force", ...shard]);
      assert.equal(r.code, 2, `${out} ${shard.join(" ")}: ${r.err}`);
      assert.match(r.err, /is the input folder; tensorcast never writes into its input \(code OUTPUT_IS_INPUT\)\n$/);
    }
    await rejectsCode(convertCheckpoint(input, out, { to: "float16", force: true, shard: { index: 0, count: 2 } }), "OUTPUT_IS_INPUT");
  }
  assert.equal(tree(dir), before);

  // A slice's folder whose shard and config.json are links to other files of the input.
  const slice = join(dir, "slice");
  mkdirSync(slice);
  symlinkSync(join(input, SHARD_NAMES[1]), join(slice, SHARD_NAMES[0]));
  linkSync(join(input, INDEX_NAME), join(slice, "config.json"));
  const withSlice = tree(dir);
  for (const shard of ["0/2", "0/1"]) {
    const r = await cli(["convert", input, "--to", "float16", "-o", slice, "--shard", shard, "--force"]);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /is the input's (shard model-00002-of-00002\.safetensors|index model\.safetensors\.index\.json).*\(code OUTPUT_IS_INPUT\)\n$/);
    assert.equal(tree(dir), withSlice);
  }

  // A Hugging Face cache: snapshots/rev holds links to blobs/; -o blobs --force would delete them.
  const hub = join(dir, "hub");
  shardedCheckpoint(join(hub, "blobs"));
  mkdirSync(join(hub, "snapshots", "rev"), { recursive: true });
  for (const f of readdirSync(join(hub, "blobs"))) symlinkSync(join("..", "..", "blobs", f), join(hub, "snapshots", "rev", f));
  const hubBefore = tree(hub);
  const r = await cli(["convert", join(hub, "snapshots", "rev"), "--to", "float16", "-o", join(hub, "blobs"), "--force"]);
  assert.equal(r.code, 2, r.err);
  assert.match(r.err, /blobs\/.*is the input's .*\(code OUTPUT_IS_INPUT\)\n$/);
  assert.equal(tree(hub), hubBefore);

  // `index IN --from IN --force` would replace the index it reads.
  const i = await cli(["index", input, "--from", input, "--force"]);
  assert.equal(i.code, 2, i.err);
  assert.match(i.err, /the index to write is the input's index model\.safetensors\.index\.json.*\(code OUTPUT_IS_INPUT\)\n$/);
  await rejectsCode(indexCheckpoint(join(dir, "alias"), { from: input, force: true }), "OUTPUT_IS_INPUT");
  assert.equal(tree(input), inputBefore);
});

/** A pid no process has: above the kernel's pid_max. */
function deadPid(): number {
  const max = Number(readFileSync("/proc/sys/kernel/pid_max", "utf8"));
  return Math.min(max + 17, 0x7ffffff0);
}

test("stale temporaries: only a regular file of exactly our name, of a gone process, and not an input, is removed", async (t) => {
  const dir = fresh();
  const input = join(dir, "in.safetensors");
  writeFileSync(input, safetensorsBytes([{ name: "w", dtype: "float32", shape: [4], bytes: randomFloat32(4, 3) }]));
  const out = join(dir, "out.safetensors");
  const pid = deadPid();
  const temp = (p: number | string, hex = "aaaaaaaa", name = "out.safetensors"): string => join(dir, `.${name}.tensorcast-${p}-${hex}.tmp`);
  const stale = temp(pid, "0123abcd");
  writeFileSync(stale, "partial");
  const kept: string[] = [];
  const keep = (p: string): string => (kept.push(p), p);
  mkdirSync(keep(temp(pid, "aaaaaaa1")));
  mkdirSync(join(temp(pid, "aaaaaaa1"), "deep"));
  writeFileSync(join(temp(pid, "aaaaaaa1"), "deep", "precious"), "precious");
  mkdirSync(keep(temp(pid, "aaaaaaa2")));
  execFileSync("mkfifo", [keep(temp(pid, "aaaaaaa3"))]);
  const server = createServer();
  await new Promise<void>((done) => server.listen(keep(temp(pid, "aaaaaaa4")), done));
  writeFileSync(join(dir, "target"), "the link's target");
  symlinkSync(join(dir, "target"), keep(temp(pid, "aaaaaaa5")));
  symlinkSync(join(dir, "sub-target"), keep(temp(pid, "aaaaaaa6")));
  mkdirSync(join(dir, "sub-target"));
  writeFileSync(join(dir, "sub-target", "f"), "inside");
  writeFileSync(keep(temp(1, "aaaaaaa7")), "pid 1 is alive");
  writeFileSync(keep(temp(process.pid, "aaaaaaa8")), "our own");
  for (const foreign of [temp(pid, "aaaa"), temp(pid, "AAAAAAAA"), temp(pid, "aaaaaaaaa"), temp(`0${pid}`), temp(99999999999), temp(pid, "aaaaaaaa", "other.safetensors"), `${temp(pid)}.bak`]) {
    writeFileSync(keep(foreign), "not ours");
  }
  if (process.getuid?.() === 0) execFileSync("mknod", [keep(temp(pid, "aaaaaaa9")), "c", "1", "3"]);
  else t.diagnostic("not root: no character device look-alike");
  // An input named as a stale temporary of OUT.
  const sneaky = keep(temp(pid, "bbbbbbbb"));
  writeFileSync(sneaky, readFileSync(input));
  const before = new Map(kept.map((p) => [p, snapshot(p)]));
  const targets = [snapshot(join(dir, "target")), snapshot(join(dir, "sub-target"))];
  try {
    const r = await cli(["convert", sneaky, "--format", "safetensors", "--to", "float16", "-o", out]);
    assert.equal(r.code, 0, r.err);
    assert.equal(snapshot(stale), "missing", "the stale temporary is removed");
    for (const [p, s] of before) assert.equal(snapshot(p), s, p);
    assert.deepEqual([snapshot(join(dir, "target")), snapshot(join(dir, "sub-target"))], targets);
    // The same through the function itself, with nothing stale left to remove.
    writeFileSync(stale, "partial");
    assert.deepEqual(await removeStaleTemporaries(out, await InputFiles.of([{ path: sneaky, role: "the input file" }])), [stale]);
    for (const [p, s] of before) assert.equal(snapshot(p), s, p);
    // And through a side file's clean-up: out.onnx.data's look-alikes.
    const { model } = await modelWithExternalData(dir, "m");
    const sideDir = temp(pid, "cccccccc", "x.onnx.data");
    mkdirSync(sideDir);
    writeFileSync(join(sideDir, "keep"), "keep");
    const sideStale = temp(pid, "dddddddd", "x.onnx.data");
    writeFileSync(sideStale, "partial");
    await convertFile(model, join(dir, "x.onnx"), { to: "float16", names: ["W"], externalData: "x.onnx.data" });
    assert.equal(snapshot(sideStale), "missing");
    assert.equal(readFileSync(join(sideDir, "keep"), "utf8"), "keep");
  } finally {
    server.close();
  }
});

test("a killed sharded conversion's temporary folder is left alone by the next one", async () => {
  const dir = fresh();
  const input = join(dir, "ckpt");
  shardedCheckpoint(input);
  const leftover = join(dir, `.out.tensorcast-${deadPid()}-abcdef01.tmp`);
  mkdirSync(leftover);
  writeFileSync(join(leftover, SHARD_NAMES[0]), "half a shard");
  const before = snapshot(leftover);
  const r = await cli(["convert", input, "--to", "float16", "-o", join(dir, "out"), "-q"]);
  assert.equal(r.code, 0, r.err);
  assert.equal(snapshot(leftover), before);
});

test("two writers to one OUT: the one that finishes second gets IO_ERROR (exit 74), and OUT is the first one's", async () => {
  const dir = fresh();
  const input = join(dir, "in.safetensors");
  writeFileSync(input, safetensorsBytes([{ name: "w", dtype: "float32", shape: [1 << 20], bytes: randomFloat32(1 << 20, 9) }]));
  const out = join(dir, "out.safetensors");
  const runs = await Promise.all([
    cli(["convert", input, "--to", "float16", "-o", out, "-q", "--jobs", "0"]),
    cli(["convert", input, "--to", "bfloat16", "-o", out, "-q", "--jobs", "0"]),
  ]);
  const codes = runs.map((r) => r.code).sort();
  assert.deepEqual(codes, [0, 74], runs.map((r) => r.err).join(""));
  const loser = runs.find((r) => r.code === 74)!;
  assert.match(loser.err, /out\.safetensors: appeared while converting; nothing was written \(use --force to replace it\) \(code IO_ERROR\)\n$/);
  assert.deepEqual(readdirSync(dir).sort(), ["in.safetensors", "out.safetensors"]);
  // The same from the library: a file that appears at OUT mid-way.
  let made = false;
  await rejectsCode(
    convertFile(input, join(dir, "late.safetensors"), {
      to: "float16", onProgress: () => {
        if (!made) writeFileSync(join(dir, "late.safetensors"), "the other writer's");
        made = true;
      },
    }),
    "IO_ERROR", /late\.safetensors: appeared while converting/,
  );
  assert.equal(readFileSync(join(dir, "late.safetensors"), "utf8"), "the other writer's");
});
