/**
 * Interrupted conversions, as a separate process (bin/tensorcast.js, so dist/ must be built, as
 * `npm test` does first): killed with SIGKILL mid-way, a conversion of a 200 MB file leaves no OUT
 * and an unchanged IN, and the next run removes its temporary file; stopped with SIGINT (Ctrl-C) it
 * exits with 130 and removes the temporary file itself.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { encodeSafetensorsHeader } from "../../src/node/io/safetensors.js";
import { removeStaleTemporaries } from "../../src/node/io/file.js";
import { dtype } from "../../src/index.js";
import { ROOT, scratch, sha256 } from "./helpers.js";

const BIN = join(ROOT, "bin", "tensorcast.js");
const built = existsSync(join(ROOT, "dist", "node", "cli", "main.js"));
const dir = built ? scratch() : "";

/** A safetensors file of `tensors` float32 tensors of `mib` MiB each. */
function bigFile(path: string, tensors: number, mib: number): void {
  const n = (mib * 1024 * 1024) / 4;
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) values[i] = Math.sin(i) * (1 + (i % 100));
  const f32 = dtype("float32");
  const header = encodeSafetensorsHeader(
    Array.from({ length: tensors }, (_, k) => ({ name: `layer.${k}.weight`, dtype: f32, shape: [n / 1024, 1024], size: n, byteLength: 4 * n })),
  );
  const fd = openSync(path, "w");
  writeSync(fd, header);
  for (let k = 0; k < tensors; k++) writeSync(fd, new Uint8Array(values.buffer));
  closeSync(fd);
}

function temporaries(folder: string): string[] {
  return readdirSync(folder).filter((f) => f.endsWith(".tmp"));
}

/** Waits until the conversion's temporary file holds at least `bytes`, then returns its name. */
async function whenWriting(folder: string, child: ChildProcess, bytes: number): Promise<string> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the conversion ended (code ${child.exitCode}) before it could be interrupted`);
    for (const f of temporaries(folder)) {
      try {
        if (statSync(join(folder, f)).blocks * 512 >= bytes) return f;
      } catch {
        // Not there any more.
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the conversion never started writing");
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
}

test("SIGKILL mid-way: no OUT, IN unchanged, and the leftover temporary is removed later", { skip: !built && "dist/ is not built (npm run build)", timeout: 120_000 }, async () => {
  const input = join(dir, "big.safetensors");
  bigFile(input, 8, 25);
  assert.equal(statSync(input).size > 200 * 1024 * 1024, true);
  const before = sha256(input);
  const out = join(dir, "big.bf16.safetensors");
  const child = spawn(process.execPath, [BIN, "convert", input, "--to", "bfloat16", "-o", out, "--jobs", "2"], { stdio: "ignore" });
  const done = exited(child);
  const temporary = await whenWriting(dir, child, 8 * 1024 * 1024);
  child.kill("SIGKILL");
  assert.deepEqual(await done, { code: null, signal: "SIGKILL" });
  assert.ok(!existsSync(out), "a partial output was left under the final name");
  assert.equal(sha256(input), before);
  // The temporary of the killed process is still there, named as a temporary, until a later run.
  assert.deepEqual(temporaries(dir), [temporary]);
  assert.match(temporary, new RegExp(`^\\.big\\.bf16\\.safetensors\\.tensorcast-${child.pid}-[0-9a-f]+\\.tmp$`));
  assert.deepEqual(await removeStaleTemporaries(out), [join(dir, temporary)]);
  assert.deepEqual(temporaries(dir), []);
});

const STOPS: [NodeJS.Signals, number][] = [["SIGINT", 130], ["SIGTERM", 143], ["SIGHUP", 129]];
const stopInput = built ? join(dir, "mid.safetensors") : "";

for (const [signal, code] of STOPS) {
  test(`${signal} mid-way: exit ${code}, no OUT, no temporary`, { skip: !built && "dist/ is not built (npm run build)", timeout: 120_000 }, async () => {
    if (!existsSync(stopInput)) bigFile(stopInput, 4, 32);
    const out = join(dir, `mid.${signal}.f16.safetensors`);
    const child = spawn(process.execPath, [BIN, "convert", stopInput, "--to", "float16", "-o", out, "--jobs", "1"], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const done = exited(child);
    await whenWriting(dir, child, 4 * 1024 * 1024);
    child.kill(signal);
    assert.deepEqual(await done, { code, signal: null });
    assert.equal(err, `interrupted by ${signal}: ${out} was not written (${stopInput} is unchanged)\n`);
    assert.ok(!existsSync(out));
    assert.deepEqual(temporaries(dir), []);
  });
}

test("SIGTERM mid-way with --jobs 64 (workers holding chunks): exit 143, no OUT, no temporary", { skip: !built && "dist/ is not built (npm run build)", timeout: 120_000 }, async () => {
  if (!existsSync(stopInput)) bigFile(stopInput, 4, 32);
  const out = join(dir, "mid.jobs64.f8.safetensors");
  const child = spawn(process.execPath, [BIN, "convert", stopInput, "--to", "float8e4m3fn", "-o", out, "--jobs", "64", "--chunk-size", "256KiB"], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const done = exited(child);
  await whenWriting(dir, child, 1024 * 1024);
  child.kill("SIGTERM");
  assert.deepEqual(await done, { code: 143, signal: null });
  assert.equal(err, `interrupted by SIGTERM: ${out} was not written (${stopInput} is unchanged)\n`);
  assert.ok(!existsSync(out));
  assert.deepEqual(temporaries(dir), []);
});
