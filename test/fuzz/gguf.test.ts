/**
 * The GGUF class of the fuzz suite (gguf-cases.ts): mutated GGUF files through tensorcast's reader
 * (gguf-worker.ts: openGguf, every tensor's blocks read and dequantized, the core's readGguf) and
 * a sample through the real CLI (`inspect`, `convert --to float16 -o x.safetensors`), each in a
 * child process under a time and memory limit. Every case must be accepted or refused with a
 * TensorcastError (the CLI: exit 1 with one line); never a crash, hang or blow-up.
 *
 * The reference, in the full suite: llama.cpp's own reader, gguf_init_from_file of libggml-base
 * (gguf-peer.ts, in a child process of its own, as it may abort). A file tensorcast accepts must be
 * accepted by it and by llama.cpp's loader's data bounds check, and both must see the same
 * metadata, tensor infos and (where ggml has a to_float) dequantized values; except where
 * tensorcast reads more than gguf.cpp on purpose (LOOSER). A file gguf.cpp and the loader accept
 * but tensorcast refuses must be one of tensorcast's documented stricter rules (STRICTER,
 * docs/semantics.md "Reading GGUF"); anything else fails the test.
 *
 * Floods (the second test): claimed counts and lengths cost nothing; real floods cost what the
 * file holds; peak resident sizes are printed.
 *
 * Counts: TENSORCAST_FUZZ_GGUF_CASES (runs(1500) by default: 150 in npm test), TENSORCAST_FUZZ_GGUF_CLI
 * (runs(30)); TENSORCAST_FUZZ_GGUF_SEED (default 0x6767) and TENSORCAST_FUZZ_GGUF_CASE (run just
 * case N of that seed) to rerun a failure.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { closeSync, existsSync, ftruncateSync, mkdirSync, openSync, readdirSync, writeFileSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { openTensorFile } from "../../src/node/index.js";
import { scratch } from "../node/helpers.js";
import { ggmlPeer } from "../support/ggml-peer.js";
import { envCount, FULL, runs } from "../support/suite.js";
import { Bytes } from "../io/gguf/build.js";
import { runCli, type CliVerdict } from "./cli.js";
import { ggufCases, type GgufCase } from "./gguf-cases.js";
import type { GgufPeerResult } from "./gguf-peer-worker.js";
import { viewDifference } from "./gguf-view.js";
import type { GgufLibResult, GgufManifestCase } from "./gguf-worker.js";
import { supervise, type Failure } from "./supervise.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const SEED = envCount("TENSORCAST_FUZZ_GGUF_SEED", 0x6767);
const ONLY = process.env.TENSORCAST_FUZZ_GGUF_CASE;
const CASES = envCount("TENSORCAST_FUZZ_GGUF_CASES", runs(1500, 40));
const CLI_CASES = envCount("TENSORCAST_FUZZ_GGUF_CLI", runs(30, 4));
const LIMITS = { timeoutMs: envCount("TENSORCAST_FUZZ_TIMEOUT_MS", 10_000), heapMb: 512, rssLimitBytes: 1536 * 2 ** 20, parallel: 2 };
const CLI_LIMITS = { timeoutMs: 20_000, heapMb: 512, rssLimitBytes: 1536 * 2 ** 20 };
const RERUN = (i: number): string => `TENSORCAST_FUZZ_GGUF_SEED=${SEED} TENSORCAST_FUZZ_GGUF_CASE=${i} npm test -- test/fuzz/gguf.test.ts`;

/** Where tensorcast reads a file gguf.cpp refuses, on purpose: the file's own feature, named from tensorcast's view. */
const LOOSER: readonly [string, (r: GgufLibResult) => boolean][] = [
  ["big-endian (gguf.cpp reads only the host's byte order; gguf-py writes and reads both)", (r) => r.bigEndian === true],
  ["arrays of arrays (gguf.cpp refuses them; gguf-py writes a list of lists so)", (r) => r.views!.some((v) => v.kv.some((k) => k.includes("\tarray<array>")))],
  ["GGML type 42, Q2_0 (newer than the peer's libggml-base)", (r) => r.views!.some((v) => v.tensors.some((t) => t.split("\t")[1] === "42"))],
];

/** tensorcast's documented stricter rules: a refusal of a file gguf.cpp and llama.cpp's loader read, by its message. */
const STRICTER: readonly [string, RegExp][] = [
  ["a key or tensor name that is not UTF-8 (matched by name)", /is not valid UTF-8/],
  ["a NUL in a key or tensor name (gguf.cpp sees the name cut there)", /holds a NUL/],
  ["a dimension past 2^53 in a tensor with no elements (a JavaScript shape cannot hold it)", /past 2\^53/],
  ["a string longer than a JavaScript string can hold", /longer than a JavaScript string/],
  ["a split model's parts (llama.cpp's loader: names, split.no, split.count, split.tensors.count)", /split\.|NAME-0000K-of-0000N|IO_ERROR/],
];

function writeCases(dir: string, cases: readonly GgufCase[], indices: readonly number[]): string {
  const manifest: GgufManifestCase[] = indices.map((i) => {
    const c = cases[i];
    const d = join(dir, `c${i}`);
    mkdirSync(d, { recursive: true });
    for (const f of c.files) writeFileSync(join(d, f.name), f.bytes);
    return { label: c.label, paths: c.files.map((f) => join(d, f.name)), open: join(d, c.open) };
  });
  const path = join(dir, "manifest.json");
  writeFileSync(path, JSON.stringify(manifest));
  return path;
}

const isCrash = (o: string | undefined): boolean => o !== undefined && o.startsWith("X:");
const codeOf = (o: string): string => (o === "ok" ? "ok" : o.split(" ")[0]);

test("GGUF files, mutated: accepted or a clean error, as gguf.cpp decides; 0 crashes, hangs or blow-ups", { timeout: 1_800_000 }, async () => {
  const dir = scratch();
  const all = ggufCases(ONLY === undefined ? CASES : Number(ONLY) + 1, SEED);
  const indices = ONLY === undefined ? all.map((_, i) => i) : [Number(ONLY)];
  const manifest = writeCases(dir, all, indices);
  const problems: string[] = [];
  const fail = (k: number, what: string): void => {
    problems.push(`case ${indices[k]} (${all[indices[k]].label}): ${what}`);
  };
  const { results, failures } = await supervise<GgufLibResult>(join(HERE, "gguf-worker.js"), [manifest], indices.length, LIMITS);
  const tally = { cases: indices.length, accepted: 0, clean: 0, readRefused: 0, maxRss: 0 };
  for (let k = 0; k < indices.length; k++) {
    const f = failures.get(k);
    if (f) {
      fail(k, `${f.kind}: ${f.detail}`);
      continue;
    }
    const r = results.get(k)!;
    tally.maxRss = Math.max(tally.maxRss, r.maxRss);
    for (const [step, o] of [["open", r.open], ["core", r.core], ["read", r.read]] as const) if (isCrash(o)) fail(k, `crash in ${step}: ${o}`);
    if (r.open === "ok") {
      tally.accepted++;
      if (r.read !== "ok") tally.readRefused++;
    } else tally.clean++;
    // The core alone and openGguf must agree on the opened part.
    const opened = all[indices[k]].files.findIndex((x) => x.name === all[indices[k]].open);
    if (r.open === "ok" && r.core !== "ok" && r.core !== "not run") fail(k, `inconsistent: openGguf accepts, readGguf of the same bytes refuses: ${r.core}`);
    if (r.open === "ok" && r.coreView && viewDifference(r.views![opened], r.coreView)) fail(k, `inconsistent: readGguf and openGguf see different files: ${viewDifference(r.views![opened], r.coreView)}`);
  }

  // A sample through the CLI: inspect must agree with openGguf, convert with reading every tensor.
  const cli = { runs: 0, ok: 0, clean: 0 };
  const step = Math.max(1, Math.floor(indices.length / CLI_CASES));
  const sample = indices.map((_, k) => k).filter((k) => k % step === 0 && results.has(k)).slice(0, CLI_CASES);
  const runOne = async (k: number): Promise<void> => {
    const c = all[indices[k]];
    const input = join(dir, `c${indices[k]}`, c.open);
    const outDir = join(dir, `out${indices[k]}`);
    mkdirSync(outDir, { recursive: true });
    const out = join(outDir, "x.safetensors");
    const r = results.get(k)!;
    const verdicts: [string, CliVerdict][] = [
      ["inspect", await runCli(["inspect", input], CLI_LIMITS)],
      ["convert", await runCli(["convert", input, "--to", "float16", "-o", out], CLI_LIMITS)],
    ];
    for (const [what, v] of verdicts) {
      cli.runs++;
      if (v.kind === "ok") cli.ok++;
      else if (v.kind === "clean") cli.clean++;
      else fail(k, `cli ${what}: ${v.kind}: ${v.detail}`);
    }
    const [inspect, convert] = verdicts.map(([, v]) => v);
    if ((inspect.kind === "ok") !== (r.open === "ok") && (inspect.kind === "ok" || inspect.kind === "clean")) {
      fail(k, `inconsistent: inspect ${inspect.kind} ${inspect.detail}, openGguf ${codeOf(r.open)}`);
    }
    if (convert.kind === "ok" && r.read !== "ok") fail(k, `inconsistent: convert succeeds where reading the tensors gave ${r.read}`);
    if (convert.kind === "clean" && r.read === "ok") fail(k, `inconsistent: convert refuses (${convert.detail}) a file whose tensors all read`);
    if (convert.kind === "ok") {
      const back = await openTensorFile(out);
      try {
        const got = back.tensors.map((t) => `${t.name}\t[${t.shape.join(",")}]`);
        assert.deepEqual(got.sort(), [...r.listing!].sort(), `case ${indices[k]}: convert's output lists other tensors`);
      } finally {
        await back.close();
      }
    } else if (existsSync(out)) fail(k, "a failed convert left its output");
    const left = readdirSync(outDir).filter((f) => f !== "x.safetensors");
    if (left.length > 0) fail(k, `temporaries left: ${left.join(", ")}`);
  };
  const queue = [...sample];
  await Promise.all([0, 1].map(async () => {
    for (let k = queue.shift(); k !== undefined; k = queue.shift()) await runOne(k);
  }));

  // The reference: gguf.cpp, in the full suite (or when a case is rerun alone).
  const peer = ggmlPeer();
  let peerLine = "gguf.cpp: not run (full suite only)";
  if ((FULL || ONLY !== undefined) && typeof peer === "string") {
    if (process.env.CI === "true") assert.fail(`CI=true and the ggml peer is missing: ${peer}`);
    peerLine = `gguf.cpp: not run (${peer})`;
  } else if (FULL || ONLY !== undefined) {
    const p = await supervise<GgufPeerResult>(join(HERE, "gguf-peer-worker.js"), [manifest], indices.length, { ...LIMITS, heapMb: 256 });
    const t = { bothAccept: 0, viewsEqual: 0, valuesCompared: 0, bothRefuse: 0, loaderRefuses: 0, peerAborts: 0, looser: new Map<string, number>(), stricter: new Map<string, number>() };
    const bump = (m: Map<string, number>, k: string): void => {
      m.set(k, (m.get(k) ?? 0) + 1);
    };
    for (let k = 0; k < indices.length; k++) {
      const r = results.get(k);
      if (!r) continue;
      const crash = p.failures.get(k);
      const g = p.results.get(k);
      if (crash) t.peerAborts++;
      const ggufOk = g !== undefined && g.parts.every((x) => x.accepted);
      const loaderOk = ggufOk && g.parts.every((x) => x.loader === undefined);
      if (r.open === "ok") {
        if (!loaderOk) {
          const why = crash ? `gguf.cpp aborted: ${crash.detail}` : ggufOk ? g!.parts.find((x) => x.loader)!.loader! : g!.parts.find((x) => !x.accepted)!.reason ?? "";
          const known = LOOSER.find(([, is]) => is(r));
          if (known) bump(t.looser, known[0]);
          else fail(k, `peer: tensorcast accepts, llama.cpp refuses: ${why}`);
          continue;
        }
        t.bothAccept++;
        g!.parts.forEach((x, j) => {
          const d = viewDifference(r.views![j], x.view!);
          if (d) fail(k, `peer: part ${j} reads differently: ${d}`);
          for (const [i, digest] of Object.entries(x.floats ?? {})) {
            const ours = r.floats?.[`${j}:${i}`];
            if (ours === undefined) continue;
            t.valuesCompared++;
            if (ours !== digest) fail(k, `peer: part ${j} tensor ${i}: dequantized values differ from ggml's to_float`);
          }
        });
        if (!problems.some((x) => x.startsWith(`case ${indices[k]} `))) t.viewsEqual++;
      } else if (!ggufOk) t.bothRefuse++;
      else if (!loaderOk) t.loaderRefuses++;
      else {
        const rule = STRICTER.find(([, re]) => re.test(r.open));
        if (rule) bump(t.stricter, rule[0]);
        else fail(k, `peer: llama.cpp reads a file tensorcast refuses: ${r.open}`);
      }
    }
    const list = (m: Map<string, number>): string => [...m].map(([k, n]) => `${n} ${k}`).join("; ") || "none";
    peerLine = `gguf.cpp: ${t.bothAccept} accepted by both (${t.viewsEqual} read alike, ${t.valuesCompared} tensors' values compared), ${t.bothRefuse} refused by both, ${t.loaderRefuses} refused by tensorcast and llama.cpp's loader (gguf.cpp alone reads them), ${t.peerAborts} gguf.cpp aborts\n  read by tensorcast only, on purpose: ${list(t.looser)}\n  refused by tensorcast only, documented: ${list(t.stricter)}`;
  }

  console.log(`gguf fuzz (seed ${SEED}): ${tally.cases} cases: ${tally.accepted} accepted (${tally.readRefused} of them with a tensor that does not read), ${tally.clean} clean errors, ${problems.length} failures; worker peak resident ${Math.round(tally.maxRss / 2 ** 20)} MiB\n  CLI: ${cli.runs} runs on ${sample.length} cases: ${cli.ok} ok, ${cli.clean} clean errors\n  ${peerLine}`);
  if (problems.length > 0) {
    const first = Number(/^case (\d+)/.exec(problems[0])![1]);
    console.log(`${problems.slice(0, 40).join("\n")}\nrerun one: ${RERUN(first)}`);
  }
  assert.deepEqual(problems, []);
  assert.ok(ONLY !== undefined || (tally.accepted > 0 && tally.clean > 0), JSON.stringify(tally));
});

// ---- floods ------------------------------------------------------------------------------------

interface Flood {
  readonly label: string;
  /** Writes the file (sparse where it is mostly zeros). */
  readonly write: (path: string) => void;
  /** Full suite only: real floods of megabytes. */
  readonly heavy: boolean;
  /** What openGguf must do with it. */
  readonly expect: "ok" | RegExp;
}

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const header = (nTensors: bigint, nKv: bigint): Bytes => new Bytes().raw(enc("GGUF")).u32(3).u64(nTensors).u64(nKv);

/** The header bytes, then zeros up to `size` bytes without writing them (a sparse file). */
function sparse(path: string, head: Uint8Array, size: number): void {
  const fd = openSync(path, "w");
  try {
    writeSync(fd, head);
    ftruncateSync(fd, Math.max(size, head.length));
  } finally {
    closeSync(fd);
  }
}

/** `count` GGUF strings named by `name`, each followed by `tail` (a flood's entries, written fast). */
function repeated(count: number, name: (i: number) => string, tail: Uint8Array): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const n = Buffer.from(name(i));
    const head = Buffer.alloc(8);
    head.writeBigUInt64LE(BigInt(n.length));
    parts.push(head, n, Buffer.from(tail));
  }
  return Buffer.concat(parts);
}

const FLOODS: readonly Flood[] = [
  { label: "2^40 key-value pairs claimed, 100 bytes", heavy: false, expect: /over the limit of 1073741824/, write: (p) => writeFileSync(p, Buffer.concat([header(0n, 1n << 40n).bytes(), new Uint8Array(100)])) },
  { label: "2^30 pairs and 2^30 tensors claimed, 100 bytes", heavy: false, expect: /need at least/, write: (p) => writeFileSync(p, Buffer.concat([header(1n << 30n, 1n << 30n).bytes(), new Uint8Array(100)])) },
  { label: "a 1 GiB key claimed, 100 bytes", heavy: false, expect: /past the end of the file/, write: (p) => writeFileSync(p, Buffer.concat([header(0n, 1n).u64(1n << 30n).bytes(), new Uint8Array(100)])) },
  { label: "a 1 GiB string value claimed, 100 bytes", heavy: false, expect: /past the end of the file/, write: (p) => writeFileSync(p, Buffer.concat([header(0n, 1n).str("k").u32(8).u64(1n << 30n).bytes(), new Uint8Array(100)])) },
  { label: "2^30 arrays of arrays claimed, 100 bytes", heavy: false, expect: /past the end of the file/, write: (p) => writeFileSync(p, Buffer.concat([header(0n, 1n).str("k").u32(9).u32(9).u64(1n << 30n).bytes(), new Uint8Array(100)])) },
  { label: "2^30 uint64 items claimed, 100 bytes", heavy: false, expect: /past the end of the file/, write: (p) => writeFileSync(p, Buffer.concat([header(0n, 1n).str("k").u32(9).u32(10).u64(1n << 30n).bytes(), new Uint8Array(100)])) },
  // gguf.cpp's limit is 1 GiB; a JavaScript string holds 2^29 - 24 UTF-16 units.
  { label: "a real 1 GiB string value (sparse file)", heavy: true, expect: /longer than a JavaScript string/, write: (p) => sparse(p, header(0n, 1n).str("k").u32(8).u64(1n << 30n).bytes(), 2 ** 30 + 64) },
  { label: "a real 600 MiB string value (sparse file)", heavy: true, expect: /longer than a JavaScript string/, write: (p) => sparse(p, header(0n, 1n).str("k").u32(8).u64(600n << 20n).bytes(), 600 * 2 ** 20 + 64) },
  { label: "a real 128 MiB uint8 array (sparse file)", heavy: true, expect: "ok", write: (p) => sparse(p, header(0n, 1n).str("k").u32(9).u32(0).u64(128n << 20n).bytes(), 128 * 2 ** 20 + 64) },
  { label: "16,777,216 real empty strings in an array (128 MiB, sparse)", heavy: true, expect: "ok", write: (p) => sparse(p, header(0n, 1n).str("k").u32(9).u32(8).u64(1n << 24n).bytes(), 128 * 2 ** 20 + 64) },
  {
    label: "1,000,000 real key-value pairs (21 MB)", heavy: true, expect: "ok",
    write: (p) => writeFileSync(p, Buffer.concat([header(0n, 1_000_000n).bytes(), repeated(1_000_000, (i) => `k.${i}`, Uint8Array.of(0, 0, 0, 0, 7))])),
  },
  {
    label: "200,000 real tensor infos, no elements (7 MB)", heavy: true, expect: "ok",
    write: (p) => {
      // Each: one dimension of 0, type F32 (0), offset 0.
      const b = Buffer.concat([header(200_000n, 0n).bytes(), repeated(200_000, (i) => `t.${i}`, new Bytes().u32(1).u64(0).u32(0).u64(0).bytes())]);
      writeFileSync(p, Buffer.concat([b, new Uint8Array((32 - (b.length % 32)) % 32)]));
    },
  },
];

test("GGUF floods: claimed counts and lengths cost nothing, real ones what the file holds (peak resident size each)", { timeout: 600_000 }, async () => {
  const dir = scratch();
  const floods = FLOODS.filter((f) => FULL || !f.heavy);
  const lines: string[] = [];
  const problems: string[] = [];
  for (const [i, flood] of floods.entries()) {
    const d = join(dir, `f${i}`);
    mkdirSync(d);
    const path = join(d, "flood.gguf");
    flood.write(path);
    const manifest = join(d, "manifest.json");
    writeFileSync(manifest, JSON.stringify([{ label: flood.label, paths: [path], open: path, measure: true }]));
    const { results, failures } = await supervise<GgufLibResult>(join(HERE, "gguf-worker.js"), [manifest], 1, { ...LIMITS, timeoutMs: 60_000, heapMb: 1024, parallel: 1 });
    const f: Failure | undefined = failures.get(0);
    if (f) {
      problems.push(`${flood.label}: ${f.kind}: ${f.detail}`);
      continue;
    }
    const r = results.get(0)!;
    const ok = flood.expect === "ok" ? r.open === "ok" && r.read === "ok" : flood.expect.test(r.open) && r.open.startsWith("E:");
    if (!ok) problems.push(`${flood.label}: expected ${flood.expect}, got ${r.open} / ${r.read}`);
    // A claim alone must cost no more than a Node process reading nothing (about 60 MiB here).
    if (!flood.heavy && r.maxRss > 256 * 2 ** 20) problems.push(`${flood.label}: peak resident ${Math.round(r.maxRss / 2 ** 20)} MiB for a file of 100 bytes`);
    lines.push(`  ${flood.label}: ${r.open === "ok" ? "read" : codeOf(r.open)}, peak resident ${Math.round(r.maxRss / 2 ** 20)} MiB`);
  }
  console.log(`gguf floods:\n${lines.join("\n")}`);
  assert.deepEqual(problems, []);
});
