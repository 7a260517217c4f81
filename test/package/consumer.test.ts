// suite: full
/**
 * The package as people install it (issue 14, point 6). `npm pack` runs on a copy of the
 * repository without dist/ (a fresh clone: prepack must build first); the tarball holds the
 * library, its types, its sources (so every source map resolves), the CLI, README and LICENSE,
 * and nothing of the tests or the build; publint and @arethetypeswrong/cli find nothing wrong.
 * Then it is installed, offline, into an empty project, which uses it the ways people do:
 *
 * - Node ESM imports `tensorcast`, `tensorcast/web` and `tensorcast/node` and casts, castAsync
 *   on worker threads included; CommonJS `require()`s them (Node's require(esm): 20.19+, 22.12+);
 *   the `tensorcast` bin runs;
 * - TypeScript type-checks a consumer file under moduleResolution node16 and bundler (and a
 *   CommonJS file that requires it, under nodenext), against the package's own .d.ts files;
 * - Bun and Deno import the installed package (castAsync on their Web Workers and worker threads);
 * - Vite and webpack production builds of a page that calls tensorcast/web's castAsync run in
 *   Chromium: the worker is emitted as a chunk of its own and the result is cast's, byte for byte.
 *
 * Every cast is compared, bit for bit, with the repository's own `cast` and with codes written out
 * here. Bun, Deno, Chromium and the devDependencies (vite, webpack, publint, attw) follow the
 * project's rule: missing locally, the check is skipped with the reason; under CI it fails.
 */
import { after, test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join, posix, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { cast, Tensor } from "../../src/index.js";
import { engineMissing, launch, RECORDERS, type RecordedWorker } from "../browser/engines.js";
import { playgroundScript, ROOT } from "../browser/support.js";
import { findRuntime, RUNTIMES } from "../runtimes/binaries.js";

// ---- running things --------------------------------------------------------------------------

interface Ran {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `argv`; rejects with its exit status, stdout and stderr when it fails. */
function run(argv: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeout?: number }): Promise<Ran> {
  return new Promise((resolve, reject) => {
    execFile(argv[0], argv.slice(1), { cwd: options.cwd, env: options.env ?? CLEAN_ENV, maxBuffer: 256 << 20, timeout: options.timeout ?? 300_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${argv.join(" ")} (in ${options.cwd}) failed: ${error.message}\n--- stdout\n${stdout.slice(-4000)}\n--- stderr\n${stderr.slice(-4000)}`));
        else resolve({ stdout, stderr });
      });
  });
}

/**
 * The environment of the commands run here: this one, less the npm_* variables an enclosing
 * `npm test` sets (its package, its lifecycle, its prefix), which would make npm in the copy or in
 * the consumer project act for this repository.
 */
const CLEAN_ENV: NodeJS.ProcessEnv = Object.fromEntries(Object.entries({
  ...process.env, npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false",
}).filter(([k]) => !/^npm_(?!config_(update_notifier|fund|audit)$)/i.test(k) && k !== "INIT_CWD"));

/** `node` is the Node running this test: npm's scripts and the consumer's run on it. */
const NODE = process.execPath;
/** npm is the one on PATH (npm pack's prepack runs `npm run build`); it runs on NODE, first on PATH. */
const NODE_PATH_ENV: NodeJS.ProcessEnv = { ...CLEAN_ENV, PATH: `${dirname(NODE)}:${CLEAN_ENV.PATH ?? ""}` };

/** A devDependency that is not installed: skipped locally with the reason, an error under CI. */
function missingDevDependency(name: string): string {
  const reason = `${name} is not installed: it is a devDependency (npm ci installs it)`;
  if (process.env.CI) throw new Error(`CI=${process.env.CI} and ${reason}`);
  return reason;
}

const rootRequire = createRequire(join(ROOT, "package.json"));

/**
 * Where devDependency `pkg` is installed (npm ci hoists each to the repository's node_modules), or
 * undefined when it is not.
 */
function devDependency(pkg: string): string | undefined {
  const dir = join(ROOT, "node_modules", pkg);
  return existsSync(join(dir, "package.json")) ? dir : undefined;
}

/** The file devDependency `pkg`'s bin `name` runs, or undefined when it is not installed. */
function devBin(pkg: string, name: string): string | undefined {
  const dir = devDependency(pkg);
  if (!dir) return undefined;
  const { bin } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { bin: string | Record<string, string> };
  return join(dir, typeof bin === "string" ? bin : bin[name]);
}

// ---- pack and install, once ------------------------------------------------------------------

interface Installed {
  /** The temporary folder everything lives in (removed at the end). */
  readonly work: string;
  readonly tarball: string;
  /** The tarball's files, relative to its package/ folder, and where they were unpacked. */
  readonly files: readonly string[];
  readonly unpacked: string;
  /** The empty project the tarball was installed into. */
  readonly project: string;
  readonly packSeconds: number;
}

let installedOnce: Promise<Installed> | undefined;
let workDir: string | undefined;

after(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** Top-level entries of the repository a fresh clone does not have (.gitignore) or that npm pack must not see. */
const NOT_IN_A_CLONE = new Set([".git", "node_modules", "dist", "build", "test-output"]);

function installed(): Promise<Installed> {
  installedOnce ??= (async () => {
    const work = workDir = await mkdtemp(join(tmpdir(), "tensorcast-package-"));
    const cache = join(work, "npm-cache");
    // A fresh clone: the repository without dist/ or build/, its node_modules linked (npm ci's).
    const clone = join(work, "clone");
    await cp(ROOT, clone, {
      recursive: true,
      filter: (src) => {
        const rel = relative(ROOT, src);
        return !NOT_IN_A_CLONE.has(rel.split(/[\\/]/)[0]) && !/\.(tmp|tgz)$/.test(rel);
      },
    });
    await symlink(await realpath(join(ROOT, "node_modules")), join(clone, "node_modules"), "dir");
    assert.equal(existsSync(join(clone, "dist")), false);

    const started = Date.now();
    const packs = join(work, "packs");
    await mkdir(packs);
    await run(["npm", "pack", "--pack-destination", packs, "--cache", cache], { cwd: clone, env: NODE_PATH_ENV });
    const packSeconds = (Date.now() - started) / 1000;
    const [name, ...others] = await readdir(packs);
    assert.deepEqual(others, [], "npm pack made more than one file");
    const tarball = join(packs, name);

    const unpacked = join(work, "unpacked");
    await mkdir(unpacked);
    await run(["tar", "xzf", tarball, "-C", unpacked], { cwd: work });
    const files = (await listFiles(join(unpacked, "package"))).sort();

    // The consumer: an empty ES-module project; the tarball has no dependencies, so nothing but it
    // is needed and npm installs it offline with an empty cache.
    const project = join(work, "consumer");
    await mkdir(project);
    await writeFile(join(project, "package.json"), JSON.stringify({ name: "tensorcast-consumer", private: true, type: "module" }, null, 2));
    await run(["npm", "install", "--offline", "--cache", cache, tarball], { cwd: project, env: NODE_PATH_ENV });
    await writeConsumerFiles(project);
    return { work, tarball, files, unpacked: join(unpacked, "package"), project, packSeconds };
  })();
  return installedOnce;
}

async function listFiles(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...await listFiles(join(dir, e.name), rel));
    else out.push(rel);
  }
  return out;
}

// ---- what the consumer runs, and what it must get ----------------------------------------------

/** The README's first example: float32 to float8e4m3fn, 1000 saturating to 448, NaN to 0x7f. */
const SMALL_BYTES = [0x3c, 0x7e, 0x7e, 0x7f];

/**
 * The large input (above castAsync's split threshold, odd length), as source text run in every
 * consumer and here alike: crafted float8e5m2 cases first (NaN; -Inf and 1e6 saturating to
 * -57344 / 57344; -0; 2^-17, the tie between 0 and the smallest subnormal 2^-16, to even: 0),
 * then a ramp over [-700, 815].
 */
const LARGE_INPUT = [
  "const n = (1 << 20) + 5;",
  "const x = Tensor.zeros(\"float32\", [n]);",
  "for (let i = 0; i < n; i++) x.data[i] = (i % 4099) * 0.37 - 700;",
  "x.data.set([NaN, -Infinity, 1e6, -0, 2 ** -17, 57344], 0);",
].join("\n");
/** What float8e5m2 makes of LARGE_INPUT's first six elements. */
const LARGE_HEAD = [0x7e, 0xfb, 0x7b, 0x80, 0x00, 0x7b];

/** Hex of a tensor's bytes, in the consumer's source. */
const HEX = "const hex = (t) => Array.from(t.bytes(), (b) => b.toString(16).padStart(2, \"0\")).join(\"\");";

let expectedOnce: string | undefined;
/** The repository's own cast of LARGE_INPUT to float8e5m2, as hex. */
function expectedLargeHex(): string {
  expectedOnce ??= (new Function("Tensor", "cast", `${LARGE_INPUT}\n${HEX}\nreturn hex(cast(x, "float8e5m2"));`) as
    (t: typeof Tensor, c: typeof cast) => string)(Tensor, cast);
  return expectedOnce;
}

/** ESM: the three entry points, as Node, Bun and Deno run it. Prints one JSON line. */
const CONSUMER_MJS = `import { Tensor, cast, DTYPES } from "tensorcast";
import * as web from "tensorcast/web";
import * as node from "tensorcast/node";
${HEX}
${LARGE_INPUT}
const small = cast(Tensor.fromValues([1.5, 448, 1000, NaN], "float32"), "float8e4m3fn");
const viaWeb = await web.castAsync(x, "float8e5m2", { threads: 2 });
const viaNode = await node.castAsync(x, "float8e5m2", { threads: 2 });
const shared = (t) => typeof SharedArrayBuffer === "function" && t.data.buffer instanceof SharedArrayBuffer;
await web.closeCastAsyncPool();
await node.closeCastAsyncPool();
console.log(JSON.stringify({
  resolved: import.meta.resolve("tensorcast"),
  small: Array.from(small.bytes()),
  dtypes: DTYPES.length,
  version: node.packageVersion(),
  webWorker: typeof Worker === "function",
  web: { hex: hex(viaWeb), shared: shared(viaWeb) },
  node: { hex: hex(viaNode), shared: shared(viaNode) },
}));
`;

/** CommonJS: require() of the three entry points (Node's require(esm)). */
const CONSUMER_CJS = `const { Tensor, cast } = require("tensorcast");
const web = require("tensorcast/web");
const node = require("tensorcast/node");
const small = cast(Tensor.fromValues([1.5, 448, 1000, NaN], "float32"), "float8e4m3fn");
console.log(JSON.stringify({
  resolved: require.resolve("tensorcast"),
  small: Array.from(small.bytes()),
  castAsync: typeof web.castAsync,
  main: typeof node.main,
}));
`;

/**
 * TypeScript consumers. Each file both uses the API and holds @ts-expect-error lines, which fail
 * the check if the package's types went missing or loose (an `any` accepts everything).
 */
const TS_CORE = `import { Tensor, cast, castLike, dtype, TensorcastError, type DTypeName } from "tensorcast";
import { castAsync, sharedZeros } from "tensorcast/web";

const x: Tensor<"float32"> = Tensor.fromValues([1.5, 448, 1000, NaN], "float32");
const y: Tensor<"float8e4m3fn"> = cast(x, "float8e4m3fn", { saturate: false });
export const bytes: Uint8Array = y.bytes();
export const halves: Uint16Array = cast(x, "bfloat16").data;
export const like: Tensor<"int4"> = castLike(x, Tensor.zeros("int4", [0]));
export const name: DTypeName = dtype("f8e4m3").name;
export const later: Promise<Tensor<"float16">> = castAsync(x, "float16", { threads: 2 });
export const out: Tensor<"float16"> = sharedZeros("float16", [2]);
export const code = (e: unknown): string | undefined => (e instanceof TensorcastError ? e.code : undefined);
// @ts-expect-error bfloat16 lives in a Uint16Array, not a Float32Array
export const wrong: Float32Array = cast(x, "bfloat16").data;
// @ts-expect-error cast needs the target type
cast(x);
`;
const TS_NODE = `${TS_CORE}
import { castAsync as castOnThreads, main, packageVersion } from "tensorcast/node";
export const exit: Promise<number> = main(["types", "--json"]);
export const version: string = packageVersion();
export const onThreads: Promise<Tensor<"bfloat16">> = castOnThreads(x, "bfloat16");
// @ts-expect-error main takes the arguments as strings
main([1]);
`;
const TS_CJS = `import tensorcast = require("tensorcast");
import node = require("tensorcast/node");
export const y: tensorcast.Tensor<"float16"> = tensorcast.cast(tensorcast.Tensor.fromValues([1], "float32"), "float16");
export const exit: Promise<number> = node.main(["types"]);
// @ts-expect-error float16 lives in a Uint16Array
export const wrong: Float32Array = y.data;
`;

/** tsconfig for each check: the package's .d.ts files are checked too (skipLibCheck false). */
function tsconfig(options: Record<string, unknown>, file: string, nodeTypes: boolean): string {
  return JSON.stringify({
    compilerOptions: {
      target: "es2022", strict: true, noEmit: true, skipLibCheck: false, lib: nodeTypes ? ["es2022"] : ["es2022", "dom"],
      // @types/node is the repository's (a Node consumer has its own).
      types: nodeTypes ? ["node"] : [], typeRoots: [join(ROOT, "node_modules", "@types")],
      ...options,
    },
    files: [file],
  }, null, 2);
}

const TS_CHECKS: readonly { name: string; dir: string; file: string; source: string; tsconfig: string }[] = [
  { name: "moduleResolution node16 (ESM)", dir: "ts-node16", file: "check.ts", source: TS_NODE,
    tsconfig: tsconfig({ module: "node16", moduleResolution: "node16" }, "check.ts", true) },
  { name: "moduleResolution bundler (a page: DOM, no Node types)", dir: "ts-bundler", file: "check.ts", source: TS_CORE,
    tsconfig: tsconfig({ module: "esnext", moduleResolution: "bundler" }, "check.ts", false) },
  { name: "module nodenext, a CommonJS file that requires it", dir: "ts-nodenext-cjs", file: "check.cts", source: TS_CJS,
    tsconfig: tsconfig({ module: "nodenext", moduleResolution: "nodenext" }, "check.cts", true) },
];

/** The page both bundlers build: castAsync from tensorcast/web, the result as hex in globalThis.result. */
const PAGE_MAIN = `import { Tensor } from "tensorcast";
import { castAsync } from "tensorcast/web";
${HEX}
${LARGE_INPUT}
castAsync(x, "float8e5m2", { threads: 2 }).then(
  (y) => { globalThis.result = { hex: hex(y), shared: typeof SharedArrayBuffer === "function" && y.data.buffer instanceof SharedArrayBuffer }; },
  (e) => { globalThis.result = { error: String((e && e.stack) || e) }; },
);
`;

async function writeConsumerFiles(project: string): Promise<void> {
  await writeFile(join(project, "consumer.mjs"), CONSUMER_MJS);
  await writeFile(join(project, "consumer.cjs"), CONSUMER_CJS);
  for (const c of TS_CHECKS) {
    await mkdir(join(project, c.dir));
    await writeFile(join(project, c.dir, c.file), c.source);
    await writeFile(join(project, c.dir, "tsconfig.json"), c.tsconfig);
  }
  await mkdir(join(project, "web"));
  await writeFile(join(project, "web", "main.js"), PAGE_MAIN);
  // Vite's entry is the page; the recorders are a classic script, left as they are.
  await writeFile(join(project, "web", "index.html"),
    `<!doctype html><meta charset="utf-8"><title>castAsync</title>\n${RECORDERS}<script type="module" src="./main.js"></script>\n`);
}

interface ConsumerReport {
  readonly resolved: string;
  readonly small: number[];
  readonly dtypes: number;
  readonly version: string;
  readonly webWorker: boolean;
  readonly web: { hex: string; shared: boolean };
  readonly node: { hex: string; shared: boolean };
}

function lastJsonLine<T>(stdout: string): T {
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as T;
}

/** The consumer script's report: the installed copy was loaded, and every cast is cast's, bit for bit. */
async function assertConsumerReport(r: ConsumerReport, project: string, webWorkers: boolean): Promise<void> {
  assert.equal(r.resolved, pathToFileURL(join(await realpath(project), "node_modules", "tensorcast", "dist", "index.js")).href);
  assert.deepEqual(r.small, SMALL_BYTES);
  assert.equal(r.dtypes, 28);
  assert.equal(r.version, (JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { version: string }).version);
  const want = expectedLargeHex();
  assert.deepEqual(hexBytes(want.slice(0, 12)), LARGE_HEAD);
  assertSameHex(r.node.hex, want, "tensorcast/node castAsync");
  assert.equal(r.node.shared, true, "tensorcast/node castAsync did not split over worker threads");
  assertSameHex(r.web.hex, want, "tensorcast/web castAsync");
  // Where there are Web Workers (Bun, Deno) the work is split; Node has none, and castAsync casts in place.
  assert.equal(r.webWorker, webWorkers);
  assert.equal(r.web.shared, webWorkers, webWorkers ? "tensorcast/web castAsync did not split over Web Workers" : "split without Web Workers");
}

function hexBytes(hex: string): number[] {
  return Array.from({ length: hex.length / 2 }, (_, i) => parseInt(hex.slice(2 * i, 2 * i + 2), 16));
}

function assertSameHex(got: string, want: string, what: string): void {
  if (got === want) return;
  let i = 0;
  while (i < got.length && got[i] === want[i]) i++;
  const at = i >> 1;
  assert.fail(`${what}: ${got.length / 2} bytes, want ${want.length / 2}; first difference at element ${at}: ` +
    `0x${got.slice(2 * at, 2 * at + 2)}, want 0x${want.slice(2 * at, 2 * at + 2)}`);
}

// ---- the tarball ---------------------------------------------------------------------------------

test("npm pack on a fresh clone builds first; the tarball is the library, its types and sources, the CLI, README and LICENSE", { timeout: 600_000 }, async (t) => {
  const p = await installed();
  t.diagnostic(`npm pack (prepack: a clean build) in ${p.packSeconds.toFixed(1)} s: ${basename(p.tarball)}, ${p.files.length} files`);
  const manifest = JSON.parse(await readFile(join(p.unpacked, "package.json"), "utf8")) as {
    name: string; license: string; main: string; types: string; bin: Record<string, string>;
    exports: Record<string, Record<string, string>>; typesVersions: Record<string, Record<string, string[]>>;
  };
  assert.equal(basename(p.tarball), `${manifest.name}-${(JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { version: string }).version}.tgz`);

  // Nothing but these: no tests, fixtures, build/, benchmarks, playground, configs or CI scripts.
  const stray = p.files.filter((f) => !/^(package\.json|README\.md|LICENSE|bin\/tensorcast\.js|dist\/.+\.(js|d\.ts|js\.map|d\.ts\.map)|src\/.+\.ts)$/.test(f));
  assert.deepEqual(stray, []);
  assert.deepEqual(p.files.filter((f) => /(^|\/)(tests?|fixtures|build|bench|playground|scripts|node_modules)\/|\.test\./.test(f)), []);

  // The licence, and every path package.json names.
  const license = await readFile(join(p.unpacked, "LICENSE"), "utf8");
  assert.equal(manifest.license, "MIT");
  assert.match(license, /^MIT License\n\nCopyright \(c\) 2026 the tensorcast authors\n/);
  assert.match(license, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
  const named = [manifest.main, manifest.types, ...Object.values(manifest.bin),
    ...Object.values(manifest.exports).flatMap((conditions) => Object.values(conditions)),
    ...Object.values(manifest.typesVersions).flatMap((m) => Object.values(m).flat())];
  assert.deepEqual(named.map((f) => posix.normalize(f)).filter((f) => !p.files.includes(f)), []);
  for (const worker of ["dist/web/cast-worker.js", "dist/node/cast-worker.js", "dist/node/convert/worker.js"]) assert.ok(p.files.includes(worker), worker);

  // Every source map resolves: each .js and .d.ts names its map beside it, each map its file and
  // sources that are in the tarball.
  let maps = 0;
  for (const f of p.files.filter((f) => /\.(js|d\.ts)$/.test(f) && f.startsWith("dist/"))) {
    const text = await readFile(join(p.unpacked, f), "utf8");
    const url = /\n\/\/# sourceMappingURL=(\S+)\s*$/.exec(text)?.[1];
    assert.ok(url, `${f} names no source map`);
    const map = posix.join(posix.dirname(f), url);
    assert.ok(p.files.includes(map), `${f}: its map ${map} is not in the tarball`);
    const m = JSON.parse(await readFile(join(p.unpacked, map), "utf8")) as { file: string; sourceRoot?: string; sources: string[] };
    assert.equal(m.file, posix.basename(f), map);
    for (const s of m.sources) {
      const source = posix.normalize(posix.join(posix.dirname(map), m.sourceRoot ?? "", s));
      assert.ok(p.files.includes(source), `${map}: source ${s} (${source}) is not in the tarball`);
    }
    maps++;
  }
  t.diagnostic(`${maps} source maps, every source in the tarball`);
  assert.ok(maps > 100, `only ${maps} maps`);
  const orphans = p.files.filter((f) => f.endsWith(".map") && !p.files.includes(f.slice(0, -4)));
  assert.deepEqual(orphans, [], "maps of files that are not in the tarball");
});

test("publint: no errors, warnings or suggestions", { timeout: 120_000 }, async (t) => {
  const bin = devBin("publint", "publint");
  if (!bin) return t.skip(missingDevDependency("publint"));
  const p = await installed();
  const { stdout } = await run([NODE, bin, "run", p.tarball, "--level", "suggestion", "--strict"], { cwd: p.work });
  t.diagnostic(stdout.trim().split("\n").at(-1)!);
  assert.match(stdout, /All good!/);
});

test("@arethetypeswrong/cli: every entry point resolves to types in node10, node16 (ESM and CJS) and bundler", { timeout: 180_000 }, async (t) => {
  const bin = devBin("@arethetypeswrong/cli", "attw");
  if (!bin) return t.skip(missingDevDependency("@arethetypeswrong/cli"));
  const p = await installed();
  // tensorcast is ESM only. attw's cjs-resolves-to-esm says a require() of it is an error: true of
  // Node before 20.19 / 22.12 and of TypeScript's node16 mode, which attw models (its TypeScript
  // is 5.6). On the Node versions tensorcast supports require() loads it (require(esm), checked
  // below) and TypeScript 5.8+ types that under module nodenext (checked below): the rule is
  // ignored, every other one applies.
  const argv = [NODE, bin, p.tarball, "--ignore-rules", "cjs-resolves-to-esm", "--no-color", "--no-emoji"];
  // Exits non-zero on any problem but the ignored one.
  const { stdout: table } = await run([...argv, "--format", "table-flipped"], { cwd: p.work });
  // The table, one diagnostic line each (node:test escapes newlines inside one).
  for (const line of table.slice(table.indexOf("┌")).trim().split("\n")) t.diagnostic(line);
  const { stdout } = await run([...argv, "--format", "json"], { cwd: p.work });
  const report = JSON.parse(stdout) as {
    problems: Record<string, { entrypoint: string; resolutionKind: string }[]>;
    analysis: { entrypoints: Record<string, { resolutions: Record<string, { resolution?: { fileName: string } }> }> };
  };
  // The JSON lists the ignored problems too: node16 from CommonJS, for each entry point, and nothing else.
  assert.deepEqual(Object.keys(report.problems).filter((kind) => kind !== "CJSResolvesToESM"), []);
  assert.deepEqual((report.problems.CJSResolvesToESM ?? []).filter((q) => q.resolutionKind !== "node16-cjs"), []);
  // Each entry point resolves to its own .d.ts under every resolution mode.
  const want: Record<string, string> = { ".": "dist/index.d.ts", "./web": "dist/web/index.d.ts", "./node": "dist/node/index.d.ts", "./onnx": "dist/onnx/index.d.ts", "./gguf": "dist/gguf/index.d.ts" };
  assert.deepEqual(Object.keys(report.analysis.entrypoints).sort(), Object.keys(want).sort());
  for (const [entry, { resolutions }] of Object.entries(report.analysis.entrypoints)) {
    assert.deepEqual(Object.keys(resolutions).sort(), ["bundler", "node10", "node16-cjs", "node16-esm"]);
    for (const [mode, r] of Object.entries(resolutions)) {
      assert.equal(r.resolution?.fileName, `/node_modules/tensorcast/${want[entry]}`, `${entry} under ${mode}`);
    }
  }
});

// ---- Node ------------------------------------------------------------------------------------------

test("installed offline into an empty project: the tensorcast bin runs", { timeout: 600_000 }, async () => {
  const p = await installed();
  const bin = join(p.project, "node_modules", ".bin", "tensorcast");
  const { stdout: version } = await run([NODE, bin, "--version"], { cwd: p.project });
  assert.equal(version.trim(), (JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as { version: string }).version);
  const { stdout } = await run([NODE, bin, "cast", "--from", "float32", "--to", "float8e4m3fn", "1.5", "448", "1000", "nan", "--json"], { cwd: p.project });
  assert.deepEqual((JSON.parse(stdout) as { rows: { code: string }[] }).rows.map((r) => r.code), ["0x3c", "0x7e", "0x7e", "0x7f"]);
});

test(`Node ${process.version} ESM: import of tensorcast, tensorcast/web and tensorcast/node casts bit for bit`, { timeout: 600_000 }, async () => {
  const p = await installed();
  const { stdout } = await run([NODE, "consumer.mjs"], { cwd: p.project });
  await assertConsumerReport(lastJsonLine<ConsumerReport>(stdout), p.project, false);
});

const requireModule = (process.features as { require_module?: boolean }).require_module === true;
test(`Node ${process.version} CommonJS: require() of tensorcast, tensorcast/web and tensorcast/node`, {
  timeout: 600_000,
  skip: requireModule ? undefined : `Node ${process.version} has no require(esm) without a flag (Node 20.19+ and 22.12+ have it): a CommonJS program there uses import()`,
}, async () => {
  const p = await installed();
  const { stdout } = await run([NODE, "consumer.cjs"], { cwd: p.project });
  const r = lastJsonLine<{ resolved: string; small: number[]; castAsync: string; main: string }>(stdout);
  assert.equal(r.resolved, join(await realpath(p.project), "node_modules", "tensorcast", "dist", "index.js"));
  assert.deepEqual(r.small, SMALL_BYTES);
  assert.equal(r.castAsync, "function");
  assert.equal(r.main, "function");
});

test("TypeScript type-checks consumers against the package's .d.ts files", { timeout: 600_000 }, async (t) => {
  const p = await installed();
  const tsc = rootRequire.resolve("typescript/bin/tsc");
  const { version } = rootRequire("typescript/package.json") as { version: string };
  for (const c of TS_CHECKS) {
    await t.test(`TypeScript ${version}, ${c.name}`, async () => {
      await run([NODE, tsc, "-p", join(p.project, c.dir, "tsconfig.json")], { cwd: join(p.project, c.dir) });
    });
  }
});

// ---- Bun and Deno ----------------------------------------------------------------------------------

for (const rt of RUNTIMES) {
  const found = findRuntime(rt);
  if ("fail" in found) {
    test(`${rt.name} is present under CI`, () => assert.fail(found.fail));
    continue;
  }
  test(`${rt.name}: import of the installed package casts bit for bit (castAsync on Web Workers and on worker threads)`,
    { timeout: 600_000, skip: "skip" in found ? found.skip : undefined }, async (t) => {
      const binary = (found as { binary: string }).binary;
      const p = await installed();
      const { stdout: version } = await run([binary, "--version"], { cwd: p.project });
      t.diagnostic(`${rt.name} ${version.trim().split("\n")[0]}`);
      const argv = rt.argv(binary);
      const { stdout } = await run([...argv, "consumer.mjs"], { cwd: p.project });
      await assertConsumerReport(lastJsonLine<ConsumerReport>(stdout), p.project, true);
    });
}

// ---- Vite and webpack, in Chromium -------------------------------------------------------------------

interface Bundler {
  readonly name: string;
  /** The package to load it from (a devDependency). */
  readonly pkg: string;
  /** Builds the project's web/ page for production into `out`, which then holds index.html. */
  build(project: string, out: string, cache: string): Promise<string>;
}

const BUNDLERS: readonly Bundler[] = [
  {
    name: "Vite", pkg: "vite",
    async build(project, out, cache) {
      // A specifier typed string: the test compiles whether or not vite is installed.
      const specifier: string = "vite";
      const vite = (await import(specifier)) as {
        version: string;
        build(config: Record<string, unknown>): Promise<unknown>;
      };
      await vite.build({
        root: join(project, "web"), configFile: false, envDir: false, logLevel: "warn", cacheDir: cache,
        build: { outDir: out, emptyOutDir: true },
      });
      return `Vite ${vite.version}`;
    },
  },
  {
    name: "webpack", pkg: "webpack",
    async build(project, out) {
      type Stats = { hasErrors(): boolean; hasWarnings(): boolean; toString(o: unknown): string };
      type Compiler = { run(cb: (e: Error | null, s?: Stats) => void): void; close(cb: (e?: Error | null) => void): void };
      const webpack = rootRequire("webpack") as ((config: Record<string, unknown>) => Compiler) & { version: string };
      const compiler = webpack({
        mode: "production", context: join(project, "web"), entry: "./main.js", target: "web", devtool: false, cache: false,
        output: { path: out, filename: "main.js", clean: true },
      });
      const stats = await new Promise<Stats>((resolve, reject) => compiler.run((e, s) => (e ? reject(e) : resolve(s!))));
      await new Promise<void>((resolve) => compiler.close(() => resolve()));
      if (stats.hasErrors() || stats.hasWarnings()) throw new Error(`webpack: ${stats.toString({ colors: false, modules: false })}`);
      await writeFile(join(out, "index.html"),
        `<!doctype html><meta charset="utf-8"><title>castAsync</title>\n${RECORDERS}<script src="./main.js"></script>\n`);
      return `webpack ${webpack.version}`;
    },
  },
];

for (const bundler of BUNDLERS) {
  test(`a ${bundler.name} production build of a page using tensorcast/web's castAsync: the worker is its own chunk, and in Chromium the result is cast's, bit for bit`,
    { timeout: 600_000 }, async (t) => {
      const missing = engineMissing("chromium");
      if (missing) return t.skip(missing);
      if (!devDependency(bundler.pkg)) return t.skip(missingDevDependency(bundler.pkg));
      const p = await installed();
      const out = join(p.work, `out-${bundler.pkg}`);
      const started = Date.now();
      const version = await bundler.build(p.project, out, join(p.work, `cache-${bundler.pkg}`));
      const files = await listFiles(out);
      t.diagnostic(`${version}: built in ${((Date.now() - started) / 1000).toFixed(1)} s: ${files.join(", ")}`);
      assert.deepEqual(files.filter((f) => f.includes("node_modules")), []);
      await inChromium(t, out, files);
    });
}

/** Serves `out` cross-origin isolated, opens its index.html in Chromium and checks the castAsync result. */
async function inChromium(t: TestContext, out: string, files: readonly string[]): Promise<void> {
  const script = await playgroundScript();
  const { server, url } = await script.servePlayground({ dir: out, port: 0, isolated: true });
  const page = await launch("chromium");
  try {
    t.diagnostic(page.version);
    await page.goto(url);
    await page.waitFor(() => (globalThis as { result?: unknown }).result !== undefined, undefined, 120_000);
    const r = await page.evaluate<{ hex?: string; shared?: boolean; error?: string }>("globalThis.result");
    assert.equal(r.error, undefined);
    assert.deepEqual(hexBytes(r.hex!.slice(0, 12)), LARGE_HEAD);
    assertSameHex(r.hex!, expectedLargeHex(), "castAsync in the page");
    assert.equal(r.shared, true, "castAsync did not split over Web Workers (its result is not on shared memory)");
    // The workers ran the bundler's worker chunk: a file of the build, not the page's own script.
    const workers = await page.evaluate<RecordedWorker[]>("globalThis.castWorkers");
    assert.ok(workers.length >= 1, "no Web Worker was started");
    for (const w of workers) {
      const path = new URL(w.url).pathname.slice(1);
      assert.ok(files.includes(path), `worker ${w.url} is not a file of the build (${files.join(", ")})`);
      assert.ok(w.messages > 0, `worker ${path} sent nothing back`);
    }
    const scripts = await page.evaluate<string[]>("Array.from(document.scripts, (s) => s.src).filter(Boolean)");
    for (const w of workers) assert.ok(!scripts.includes(w.url), `the worker is the page's own script ${w.url}`);
    t.diagnostic(`worker chunk: ${[...new Set(workers.map((w) => new URL(w.url).pathname))].join(", ")}`);
    // Every script the build emitted is used: webpack once copied a raw cast-worker.js that no page loaded.
    const loaded = new Set([...scripts, ...workers.map((w) => w.url)].map((u) => new URL(u).pathname.slice(1)));
    assert.deepEqual(files.filter((f) => f.endsWith(".js") && !loaded.has(f)), [], "scripts in the build that nothing loads");
    assert.deepEqual(await page.errors(), []);
  } finally {
    await page.close();
    server.close();
  }
}
