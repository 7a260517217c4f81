/**
 * OUT's path: every problem with it is found before IN is opened (a bad -o never costs a
 * conversion), devices, FIFOs, sockets and directories are never replaced (even with --force), a
 * symbolic link is replaced itself and never written through, what appears at OUT during the
 * conversion is left alone, and a full disk is IO_ERROR (exit 74) leaving nothing behind.
 *
 * Device nodes and mounts need root: as root (this project's sandbox) the tests make a character
 * device with mknod and mount small tmpfs file systems; otherwise those cases are skipped, saying so.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { convertFile, exampleCheckpoint } from "../../src/node/index.js";
import { AtomicOutput } from "../../src/node/io/file.js";
import { cli, randomFloat32, rejectsCode, safetensorsBytes, scratch } from "./helpers.js";

const dir = scratch();
const root = process.getuid?.() === 0;
const example = join(dir, "example.safetensors");
writeFileSync(example, exampleCheckpoint());
/** Never created: were it opened, the error would be "cannot open it: no such file". */
const absent = join(dir, "absent.safetensors");

/** Mounts a tmpfs at a new folder; undefined (and why) when that is not possible here. */
function mountTmpfs(name: string, options: string): { path?: string; why?: string } {
  if (!root) return { why: "mounting a tmpfs needs root" };
  const path = join(dir, name);
  mkdirSync(path);
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", path], { encoding: "utf8" });
  if (r.status !== 0) return { why: `mount -t tmpfs failed: ${r.stderr.trim() || r.error?.message}` };
  return { path };
}

function unmount(path: string): void {
  spawnSync("umount", [path]);
}

interface Case {
  what: string;
  output: string;
  force?: boolean;
  /** CLI exit code, library error code, and the message. */
  exit: number;
  code: string;
  message: RegExp;
}

async function assertRefusedFirst(c: Case): Promise<void> {
  const argv = ["convert", absent, "--to", "bfloat16", "-o", c.output, ...(c.force ? ["--force"] : [])];
  const r = await cli(argv);
  assert.equal(r.code, c.exit, `${c.what}: ${r.err}`);
  assert.match(r.err, c.message, c.what);
  assert.doesNotMatch(r.err, /absent\.safetensors/, `${c.what}: IN was opened first`);
  await rejectsCode(convertFile(absent, c.output, { to: "bfloat16", force: c.force }), c.code, c.message);
}

test("every problem with OUT is found before IN is opened, and nothing is replaced", async () => {
  const existing = join(dir, "existing.safetensors");
  writeFileSync(existing, "keep");
  const link = join(dir, "link.safetensors");
  symlinkSync(existing, link);
  const fifo = join(dir, "fifo.safetensors");
  execFileSync("mkfifo", [fifo]);
  const notFolder = join(dir, "file-not-folder");
  writeFileSync(notFolder, "");
  const socketPath = join(dir, "socket.safetensors");
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  try {
    const cases: Case[] = [
      { what: "empty", output: "", exit: 2, code: "INVALID_ATTRIBUTE", message: /the output path is empty; name the file to write/ },
      { what: "directory", output: dir, force: true, exit: 2, code: "INVALID_ATTRIBUTE", message: /: is a directory; name the file to write/ },
      { what: "trailing slash", output: `${join(dir, "new")}/`, exit: 2, code: "INVALID_ATTRIBUTE", message: /new\/: ends with a slash, so it names a directory/ },
      { what: "missing folder", output: join(dir, "nope", "x.safetensors"), exit: 74, code: "IO_ERROR", message: /x\.safetensors: cannot write it: its directory .*nope does not exist/ },
      { what: "folder is a file", output: join(notFolder, "x.safetensors"), exit: 74, code: "IO_ERROR", message: /x\.safetensors: cannot look at it: a part of its path is not a directory/ },
      { what: "FIFO", output: fifo, force: true, exit: 2, code: "INVALID_ATTRIBUTE", message: /fifo\.safetensors: is a FIFO \(named pipe\); tensorcast writes only regular files and never replaces anything else, even with --force/ },
      { what: "socket", output: socketPath, force: true, exit: 2, code: "INVALID_ATTRIBUTE", message: /socket\.safetensors: is a socket; tensorcast writes only regular files/ },
      { what: "existing file", output: existing, exit: 2, code: "INVALID_ATTRIBUTE", message: /existing\.safetensors: already exists; pass --force to replace it/ },
      { what: "symbolic link", output: link, exit: 2, code: "INVALID_ATTRIBUTE", message: /link\.safetensors: already exists \(a symbolic link\); pass --force to replace it/ },
    ];
    for (const c of cases) await assertRefusedFirst(c);
    // The CLI says which option was wrong.
    assert.match((await cli(["convert", absent, "--to", "bfloat16", "-o", fifo, "--force"])).err, /^error: -o: .*fifo\.safetensors: is a FIFO/);
    // Nothing was replaced or created.
    assert.ok(lstatSync(fifo).isFIFO());
    assert.ok(lstatSync(socketPath).isSocket());
    assert.equal(readFileSync(existing, "utf8"), "keep");
    assert.ok(lstatSync(link).isSymbolicLink());
    assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith(".tmp")), []);
    // OUT naming IN, even through a link, is refused even with --force (IN must exist for that check).
    const toInput = join(dir, "to-input.safetensors");
    symlinkSync(example, toInput);
    for (const output of [example, toInput]) {
      const r = await cli(["convert", example, "--to", "bfloat16", "-o", output, "--force"]);
      assert.equal(r.code, 2, r.err);
      assert.match(r.err, /is the input file; tensorcast never overwrites its input/);
      await rejectsCode(convertFile(example, output, { to: "bfloat16", force: true }), "OUTPUT_IS_INPUT", /is the input file/);
    }
    assert.deepEqual(new Uint8Array(readFileSync(example)), exampleCheckpoint());
  } finally {
    server.close();
  }
});

test("a character device given as OUT is refused even with --force (the null-device report)", { skip: !root && "mknod needs root" }, async () => {
  const device = join(dir, "null-device");
  execFileSync("mknod", [device, "c", "1", "3"]);
  await assertRefusedFirst({
    what: "character device", output: device, force: true, exit: 2, code: "INVALID_ATTRIBUTE",
    message: /null-device: is a character device; tensorcast writes only regular files and never replaces anything else, even with --force/,
  });
  const r = await cli(["convert", example, "--to", "bfloat16", "-o", device, "--force"]);
  assert.equal(r.code, 2, r.err);
  const st = lstatSync(device);
  assert.ok(st.isCharacterDevice(), "the device was replaced");
  assert.equal(st.rdev, lstatSync("/dev/null").rdev);
});

test("a folder OUT cannot be written in is IO_ERROR before IN is opened", async (t) => {
  if (root) {
    const ro = mountTmpfs("read-only", "ro,size=64k");
    if (!ro.path) return t.skip(ro.why);
    try {
      await assertRefusedFirst({ what: "read-only folder", output: join(ro.path, "x.safetensors"), exit: 74, code: "IO_ERROR", message: /x\.safetensors: cannot write in its directory .*read-only: the file system is read-only \(EROFS\)/ });
    } finally {
      unmount(ro.path);
    }
  } else {
    const locked = join(dir, "locked");
    mkdirSync(locked, { mode: 0o555 });
    await assertRefusedFirst({ what: "unwritable folder", output: join(locked, "x.safetensors"), exit: 74, code: "IO_ERROR", message: /cannot write in its directory .*locked: permission denied/ });
  }
});

test("--force replaces a symbolic link itself, never the file it points to", async () => {
  const target = join(dir, "target.safetensors");
  writeFileSync(target, "the link's target");
  const link = join(dir, "forced-link.safetensors");
  symlinkSync(target, link);
  const dangling = join(dir, "dangling.safetensors");
  symlinkSync(join(dir, "nowhere"), dangling);
  const reference = join(dir, "reference.bf16.safetensors");
  assert.equal((await cli(["convert", example, "--to", "bfloat16", "-o", reference])).code, 0);
  for (const output of [link, dangling]) {
    const r = await cli(["convert", example, "--to", "bfloat16", "-o", output, "--force"]);
    assert.equal(r.code, 0, r.err);
    assert.ok(lstatSync(output).isFile(), `${output} is still a link`);
    assert.deepEqual(readFileSync(output), readFileSync(reference));
  }
  assert.equal(readFileSync(target, "utf8"), "the link's target");
  assert.ok(!existsSync(join(dir, "nowhere")));
});

test("a FIFO that appears at OUT while converting is left alone, with or without --force", async () => {
  for (const force of [true, false]) {
    const out = join(dir, `appears-${force}.safetensors`);
    let made = false;
    const e = await rejectsCode(
      convertFile(example, out, {
        to: "float16", force,
        onProgress: () => {
          if (!made) execFileSync("mkfifo", [out]);
          made = true;
        },
      }),
      "IO_ERROR",
      force ? /appears-true\.safetensors: became a FIFO \(named pipe\) while converting; it was left alone and nothing was written/
        : /appears-false\.safetensors: appeared while converting; nothing was written/,
    );
    assert.ok(e);
    assert.ok(lstatSync(out).isFIFO());
  }
  assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith(".tmp")), []);
});

test("AtomicOutput.commit re-checks OUT right before the rename", async () => {
  const out = join(dir, "late.bin");
  const o = await AtomicOutput.create(out);
  await o.write(new Uint8Array([1, 2, 3]), 0);
  await o.finish(3);
  execFileSync("mkfifo", [out]);
  await rejectsCode(o.commit(true), "IO_ERROR", /late\.bin: became a FIFO \(named pipe\) while converting/);
  assert.ok(lstatSync(out).isFIFO());
  assert.ok(!existsSync(o.temporary));
});

test("a full disk is IO_ERROR naming ENOSPC, exit 74, and leaves nothing", async (t) => {
  const full = mountTmpfs("full", "size=1m");
  if (!full.path) return t.skip(full.why);
  try {
    const input = join(dir, "four-mib.safetensors");
    // 4 MiB of float32; 2 MiB as float16, twice the file system's size.
    writeFileSync(input, safetensorsBytes([{ name: "w", dtype: "float32", shape: [1024, 1024], bytes: randomFloat32(1 << 20, 11) }]));
    const out = join(full.path, "out.safetensors");
    const r = await cli(["convert", input, "--to", "float16", "-o", out]);
    assert.equal(r.code, 74, r.err);
    assert.match(r.err, /^error: .*full\/out\.safetensors: cannot write it: no space left on the device \(ENOSPC\) \(code IO_ERROR\)\n$/);
    assert.deepEqual(readdirSync(full.path), []);
    await rejectsCode(convertFile(input, out, { to: "float16" }), "IO_ERROR", /no space left on the device \(ENOSPC\)/);
    assert.deepEqual(readdirSync(full.path), []);
  } finally {
    unmount(full.path);
  }
});
