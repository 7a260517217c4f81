// suite: full
/**
 * tensorcast on Bun and Deno: the exhaustive codec tests, the cast digest and the README examples
 * run in each runtime (test/runtimes/run-checks.ts) and must agree with Node bit for bit; the CLI
 * (tensorcast/node: files, worker threads) converts a checkpoint there to the same bytes as Node, and
 * the quantize helper thread (tensorcast/node's useQuantizeThread) runs there with Node's bytes.
 * The runtimes come from the npm registry (@oven/bun-linux-x64's bin/bun, @deno/linux-x64-glibc's
 * deno); .ci/run fetches them and names them in TENSORCAST_BUN and TENSORCAST_DENO. Without them
 * the tests are skipped with the reason, except under CI, where a missing runtime fails.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { bundleCodecChecks, type CodecChecks } from "../browser/support.js";
import type { ExampleResult } from "../support/readme-examples.js";
import { findRuntime, RUNTIMES } from "./binaries.js";

const run = promisify(execFile);
const ROOT = new URL("../../../", import.meta.url).pathname;
const CHECKS = join(ROOT, "build", "test", "runtimes", "run-checks.js");
const README = join(ROOT, "README.md");
const EXAMPLE = join(ROOT, "test", "fixtures", "checkpoints", "example.safetensors");
const QUANT_THREAD = join(ROOT, "build", "test", "runtimes", "quant-thread-check.js");

interface QuantThreadCheck {
  readonly one: string[];
  readonly two: string[];
  readonly chunks: number;
}
async function quantThread(argv: readonly string[]): Promise<QuantThreadCheck> {
  const { stdout } = await run(argv[0], [...argv.slice(1), QUANT_THREAD], { timeout: 120_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as QuantThreadCheck;
}

interface Checks {
  readonly codec: CodecChecks;
  readonly examples: readonly ExampleResult[];
  readonly float16Array: boolean;
}

async function runChecks(argv: readonly string[], bundle: string): Promise<Checks> {
  const { stdout } = await run(argv[0], [...argv.slice(1), CHECKS, bundle, README], { maxBuffer: 64 << 20, timeout: 600_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as Checks;
}

let nodeChecks: Promise<{ bundle: string; checks: Checks }> | undefined;
function inNode(): Promise<{ bundle: string; checks: Checks }> {
  nodeChecks ??= (async () => {
    const { file } = await bundleCodecChecks();
    return { bundle: file, checks: await runChecks([process.execPath], file) };
  })();
  return nodeChecks;
}

for (const rt of RUNTIMES) {
  const found = findRuntime(rt);
  if ("fail" in found) {
    test(`${rt.name} is present under CI`, () => assert.fail(found.fail));
    continue;
  }
  const skip = "skip" in found ? found.skip : undefined;
  const binary = "binary" in found ? found.binary : undefined;

  test(`${rt.name}: codec tests, cast digest and README examples agree with Node bit for bit`, { skip }, async (t) => {
    const node = await inNode();
    const { stdout: version } = await run(binary!, ["--version"]);
    const other = await runChecks(rt.argv(binary!), node.bundle);
    const r = other.codec.tests;
    t.diagnostic(`${rt.name} ${version.trim().split("\n")[0]}: ${r.passed}/${r.tests} codec tests passed, ${r.skipped.length} skipped, in ${r.ms} ms; ` +
      `${other.codec.digest.conversions} conversions hashed; ${other.examples.length} README lines; Float16Array: ${other.float16Array}`);
    assert.equal(r.failed, 0, `first failure: ${JSON.stringify(r.failures[0])}`);
    assert.deepEqual(r.names, node.checks.codec.tests.names);
    assert.ok(r.tests >= 80, `only ${r.tests} codec tests ran`);
    // Only the opt-in 2^32 sweep may be skipped, and the native float16 tests where Float16Array is missing.
    const allowed = (s: { reason: string }): boolean => s.reason.includes("TENSORCAST_EXHAUSTIVE") || (!other.float16Array && /Float16Array/.test(s.reason));
    assert.deepEqual(r.skipped.filter((s) => !allowed(s)), []);
    const differing = Object.keys(node.checks.codec.digest.hashes).filter((k) => other.codec.digest.hashes[k] !== node.checks.codec.digest.hashes[k]);
    assert.deepEqual(differing, [], `${rt.name}'s cast output differs from Node's, first at ${differing[0]}`);
    assert.equal(other.codec.digest.conversions, node.checks.codec.digest.conversions);
    assert.deepEqual(other.examples.filter((e) => !e.ok), []);
    assert.deepEqual(other.examples.map((e) => e.actual), node.checks.examples.map((e) => e.actual));
  });

  test(`${rt.name}: the CLI converts a checkpoint with worker threads to Node's bytes`, { skip }, async () => {
    const dir = await mkdtemp(join(tmpdir(), `tensorcast-${rt.name.toLowerCase()}-`));
    try {
      const convert = async (argv: readonly string[], out: string): Promise<Buffer> => {
        await run(argv[0], [...argv.slice(1), join(ROOT, "bin", "tensorcast.js"), "convert", EXAMPLE, "--to", "bfloat16", "--jobs", "2", "-o", out, "--quiet"]);
        return readFile(out);
      };
      const ours = await convert(rt.argv(binary!), join(dir, "other.safetensors"));
      const node = await convert([process.execPath], join(dir, "node.safetensors"));
      assert.ok(node.length > 1000);
      assert.ok(ours.equals(node), `${rt.name}'s output differs from Node's`);
      const { stdout } = await run(rt.argv(binary!)[0], [...rt.argv(binary!).slice(1), join(ROOT, "bin", "tensorcast.js"), "diff", EXAMPLE, join(dir, "other.safetensors"), "--json"]);
      const diff = JSON.parse(stdout) as { tensors: unknown[] };
      assert.equal(diff.tensors.length, 6);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test(`${rt.name}: the quantize helper thread runs chunks and gives Node's bytes`, { skip }, async (t) => {
    const [other, node] = await Promise.all([quantThread(rt.argv(binary!)), quantThread([process.execPath])]);
    t.diagnostic(`${rt.name}: the helper ran ${other.chunks} chunks (Node: ${node.chunks})`);
    assert.deepEqual(other.one, node.one, `${rt.name}'s one-thread bytes differ from Node's`);
    assert.deepEqual(other.two, node.one, `${rt.name}'s bytes with the helper thread differ from Node's`);
    assert.deepEqual(node.two, node.one);
    assert.ok(other.chunks > 0 && node.chunks > 0, "the helper thread ran no chunk");
  });
}
