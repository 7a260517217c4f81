#!/usr/bin/env node
/**
 * The playground: a static page that explores every tensorcast data type in the browser.
 *
 *   node scripts/playground.mjs build [--out DIR]             builds the page into DIR (build/playground)
 *   node scripts/playground.mjs serve [--out DIR] [--port N]  builds it, then serves it on 127.0.0.1:N
 *                                                            (default 5173, or $PORT; 0 picks a free port)
 *
 * The page loads two ES modules: `tensorcast.js`, the library's ESM build (dist/index.js, so run
 * `npm run build` first) bundled into one minified file, and `app.js`, the page itself, whose
 * `import ... from "tensorcast"` is left pointing at `./tensorcast.js`. The core bundle is built for
 * the browser: an import of a Node built-in anywhere in it (`node:fs`, `fs`, `buffer`, ...) fails
 * the build, naming the file that imports it. Its minified and gzipped sizes are printed, and a
 * core bundle over CORE_GZIP_BUDGET bytes gzipped fails the build too.
 *
 * The functions below are exported for the browser tests (test/browser/), which build the page and
 * serve it on a free port.
 */
import { builtinModules } from "node:module";
import { createServer } from "node:http";
import { copyFile, mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { dirname, extname, join, normalize, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const DEFAULT_OUT = join(ROOT, "build", "playground");
export const DEFAULT_PORT = 5173;
/** The core bundle's budget, minified and gzipped, in bytes: 40 KiB until the onnxruntime and TensorFlow.js
 * interop joined the core (about 2.3 KiB gzipped; a tree-shaking bundler drops it from apps that do not call it),
 * 44 KiB until QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear did (43.3 -> 47.2 KiB: 3.9 KiB for every
 * version's rules, the kernels and runModel's three operators), 48 KiB until their first WebAssembly SIMD kernels
 * did (47.2 -> 48.8 KiB with issue 24's storage checks: the kernels are built from source in the bundle), 52 KiB
 * until the rest of issue 25's kernels did (49.2 -> 52.8 KiB: int4 / uint4, float8e4m3fn and float4e2m1 both ways,
 * e8m0 scales, the per-block record table, the arena path, quantizeLinearInto / dequantizeLinearInto and the
 * checkpoint block kernels), 56 KiB until GGML's 32 block types did (52.8 -> 62.9 KiB: the table, one decoder per
 * type and the IQ codebooks, expanded at load from their index lists), 64 KiB until their WebAssembly SIMD
 * decoders did (62.8 -> 68.0 KiB: 24 block types' kernels, built from source like the others). */
export const CORE_GZIP_BUDGET = 72 * 1024;
/** What the page targets: every browser with ES2022 (class fields, top-level await, BigInt64Array). */
const TARGET = "es2022";

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, m.split("/")[0]]));

/** Whether `path` names a Node built-in module: `node:anything`, or a bare name Node reserves (`fs`, `fs/promises`). */
export function isNodeBuiltin(path) {
  return path.startsWith("node:") || BUILTINS.has(path) || BUILTINS.has(path.split("/")[0]);
}

/**
 * An esbuild plugin that fails the build on any import of a Node built-in, with a message naming
 * the importing file. (esbuild's `platform: "browser"` already refuses them, but only with
 * "Could not resolve"; this says why.)
 */
export const noNodeBuiltins = {
  name: "no-node-builtins",
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === "entry-point" || !isNodeBuiltin(args.path)) return undefined;
      const from = args.importer ? relative(ROOT, args.importer) : "(entry)";
      return {
        errors: [{
          text: `Node built-in "${args.path}" imported by ${from}: the browser bundle must not use Node built-ins ` +
            `(Node-only code belongs in src/node/, which the core does not import)`,
        }],
      };
    });
  },
};

/**
 * Bundles `entry` (default dist/index.js) for the browser as one minified ES module.
 * @returns the code, its size and its gzipped size (level 9) in bytes.
 * @throws esbuild's error when the entry imports a Node built-in (the message names the importer).
 */
export async function bundleCore({ entry = join(ROOT, "dist", "index.js"), minify = true } = {}) {
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: TARGET,
    minify,
    write: false,
    logLevel: "silent",
    legalComments: "none",
    plugins: [noNodeBuiltins],
  });
  const code = result.outputFiles[0].contents;
  return { code, bytes: code.byteLength, gzipBytes: gzipSync(code, { level: 9 }).byteLength };
}

/** What the model-file panel reads files with, bundled into model-files.js (loaded when a file is first opened). */
const MODEL_FILES_ENTRY = `export { readGguf, ggufModel, readGgufBlocks, blobSource } from ${JSON.stringify(join(ROOT, "dist", "gguf", "index.js"))};
export { readSafetensors, readSafetensorsElements } from ${JSON.stringify(join(ROOT, "dist", "io", "safetensors", "index.js"))};
`;

/** What the GGUF panel's worker runs (and the panel reads the preset names from), bundled into gguf-job.js (loaded when the panel is first used). */
const GGUF_JOB_ENTRY = `export { readGguf, ggufModel, blobSource } from ${JSON.stringify(join(ROOT, "dist", "gguf", "index.js"))};
export { LLAMA_PRESETS } from ${JSON.stringify(join(ROOT, "dist", "ggml", "presets.js"))};
export { quantizeGgufModel } from ${JSON.stringify(join(ROOT, "dist", "io", "gguf", "quantize-job.js"))};
export { quantizeBand } from ${JSON.stringify(join(ROOT, "dist", "io", "gguf", "quantize-band.js"))};
export { ggmlType } from ${JSON.stringify(join(ROOT, "dist", "ggml", "types.js"))};
export { readImatrix } from ${JSON.stringify(join(ROOT, "dist", "io", "gguf", "imatrix.js"))};
`;

/**
 * What the same worker runs for the Hugging Face folder panel, bundled into hf-job.js (imported by the worker when a
 * folder's job first comes: the folder's checks, the HF -> GGUF plan with its tokenizers, the encoders, the job).
 */
const HF_JOB_ENTRY = `export { blobFolder } from ${JSON.stringify(join(ROOT, "dist", "io", "hf-gguf", "blob-folder.js"))};
export { readHfFolderFiles, hfTensorHeaders, planHfFolder, writeHfGguf, hfGgufLayout, hfQuantizeJob } from ${JSON.stringify(join(ROOT, "dist", "io", "hf-gguf", "folder.js"))};
export { runGgufJob } from ${JSON.stringify(join(ROOT, "dist", "io", "gguf", "quantize-job.js"))};
`;

/**
 * An esbuild plugin that takes from ./tensorcast.js, the core bundle the page has already loaded,
 * every module of dist/ whose exports are all the core's own (the same objects, as Node sees them):
 * one TensorcastError class, one type table, one copy of GGML's decoders. Any other module is
 * bundled (small helpers the core does not export).
 */
function shareCore() {
  return {
    name: "share-core",
    setup(build) {
      const dist = join(ROOT, "dist") + sep;
      let core;
      const shared = new Map();
      build.onResolve({ filter: /^\.\.?\// }, async (args) => {
        if (args.namespace === "core-share") return { path: "./tensorcast.js", external: true };
        const path = resolve(args.resolveDir, args.path);
        if (!path.startsWith(dist)) return undefined;
        core ??= await import(pathToFileURL(join(ROOT, "dist", "index.js")).href);
        const m = await import(pathToFileURL(path).href);
        const names = Object.keys(m);
        if (names.length === 0 || names.some((n) => core[n] !== m[n])) return undefined;
        shared.set(path, names);
        return { path, namespace: "core-share" };
      });
      build.onLoad({ filter: /.*/, namespace: "core-share" }, ({ path }) => ({
        contents: `export { ${shared.get(path).join(", ")} } from "./tensorcast.js";\n`, loader: "js",
      }));
    },
  };
}

/** model-files.js (the GGUF and safetensors readers) or gguf-job.js (the GGUF quantization job), minified, sharing the core's modules. */
async function bundleModelFiles(contents = MODEL_FILES_ENTRY, sourcefile = "model-files.js") {
  const result = await esbuild.build({
    stdin: { contents, resolveDir: ROOT, sourcefile, loader: "js" },
    bundle: true, format: "esm", platform: "browser", target: TARGET, minify: true, write: false, logLevel: "silent",
    legalComments: "none", plugins: [shareCore(), noNodeBuiltins],
  });
  const code = result.outputFiles[0].contents;
  return { code, bytes: code.byteLength, gzipBytes: gzipSync(code, { level: 9 }).byteLength };
}

/**
 * One of the page's own modules (playground/src/main.ts, worker.ts, the tensor box's Web Worker, or
 * ggufWorker.ts and ggufBandWorker.ts, the GGUF panel's), with "tensorcast" left as an import of ./tensorcast.js,
 * "tensorcast-model-files" of ./model-files.js, "tensorcast-gguf-job" of ./gguf-job.js and "tensorcast-hf-job" of ./hf-job.js.
 */
async function bundleApp(entry = "main.ts") {
  const tensorcastExternal = {
    name: "tensorcast-external",
    setup(build) {
      build.onResolve({ filter: /^tensorcast$/ }, () => ({ path: "./tensorcast.js", external: true }));
      build.onResolve({ filter: /^tensorcast-model-files$/ }, () => ({ path: "./model-files.js", external: true }));
      build.onResolve({ filter: /^tensorcast-gguf-job$/ }, () => ({ path: "./gguf-job.js", external: true }));
      build.onResolve({ filter: /^tensorcast-hf-job$/ }, () => ({ path: "./hf-job.js", external: true }));
    },
  };
  const result = await esbuild.build({
    entryPoints: [join(ROOT, "playground", "src", entry)],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: TARGET,
    // Left readable: view-source shows how the page calls the library.
    minify: false,
    write: false,
    logLevel: "silent",
    plugins: [tensorcastExternal, noNodeBuiltins],
  });
  return result.outputFiles[0].contents;
}

/**
 * Builds the page into `out`: index.html, style.css, tensorcast.js (the core bundle), model-files.js
 * (the model-file panel's readers), gguf-job.js (the GGUF panel's quantization job), hf-job.js (the folder panel's), app.js, worker.js
 * (the tensor box's Web Worker, a module that imports tensorcast.js too), gguf-worker.js and
 * gguf-band-worker.js (the GGUF panel's job and band workers, which import gguf-job.js).
 * @returns the output folder and the sizes of the core bundle, model-files.js, gguf-job.js and hf-job.js.
 */
export async function buildPlayground({ out = DEFAULT_OUT } = {}) {
  const entry = join(ROOT, "dist", "index.js");
  try {
    await stat(entry);
  } catch {
    throw new Error(`${relative(ROOT, entry)} is missing: run \`npm run build\` first (npm run build:playground does)`);
  }
  const core = await bundleCore({ entry });
  if (core.gzipBytes > CORE_GZIP_BUDGET) {
    throw new Error(`the core bundle is ${core.gzipBytes} bytes gzipped, over its budget of ${CORE_GZIP_BUDGET}`);
  }
  const modelFiles = await bundleModelFiles();
  const ggufJob = await bundleModelFiles(GGUF_JOB_ENTRY, "gguf-job.js");
  const hfJob = await bundleModelFiles(HF_JOB_ENTRY, "hf-job.js");
  const app = await bundleApp();
  const worker = await bundleApp("worker.ts");
  const ggufWorker = await bundleApp("ggufWorker.ts");
  const ggufBandWorker = await bundleApp("ggufBandWorker.ts");
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  await writeFile(join(out, "tensorcast.js"), core.code);
  await writeFile(join(out, "model-files.js"), modelFiles.code);
  await writeFile(join(out, "app.js"), app);
  await writeFile(join(out, "worker.js"), worker);
  await writeFile(join(out, "gguf-job.js"), ggufJob.code);
  await writeFile(join(out, "hf-job.js"), hfJob.code);
  await writeFile(join(out, "gguf-worker.js"), ggufWorker);
  await writeFile(join(out, "gguf-band-worker.js"), ggufBandWorker);
  for (const file of ["index.html", "style.css"]) await copyFile(join(ROOT, "playground", file), join(out, file));
  return {
    out, coreBytes: core.bytes, coreGzipBytes: core.gzipBytes,
    modelFilesBytes: modelFiles.bytes, modelFilesGzipBytes: modelFiles.gzipBytes,
    ggufJobBytes: ggufJob.bytes, ggufJobGzipBytes: ggufJob.gzipBytes,
    hfJobBytes: hfJob.bytes, hfJobGzipBytes: hfJob.gzipBytes,
  };
}

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".json": "application/json",
};

/**
 * Serves the files under `dir` on `host:port` (port 0: a free one). GET and HEAD only; paths
 * outside `dir` are refused. With `isolated` (the default) every response carries the two headers
 * that make the page cross-origin isolated, so it has SharedArrayBuffer and tensorcast/web's
 * castAsync can share memory with its Web Workers; every resource the page loads is same-origin.
 * @returns the server and its base URL, once it listens.
 */
export function servePlayground({ dir = DEFAULT_OUT, port = DEFAULT_PORT, host = "127.0.0.1", isolated = true } = {}) {
  const isolation = isolated ? { "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" } : {};
  const root = resolve(dir);
  const server = createServer(async (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD" }).end();
      return;
    }
    let path;
    try {
      path = decodeURIComponent(new URL(req.url ?? "/", "http://localhost").pathname);
    } catch {
      res.writeHead(400).end();
      return;
    }
    const file = normalize(join(root, path.endsWith("/") ? `${path}index.html` : path));
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, {
        "Content-Type": TYPES[extname(file)] ?? "application/octet-stream",
        "Content-Length": body.byteLength,
        "Cache-Control": "no-store",
        ...isolation,
      });
      res.end(req.method === "HEAD" ? undefined : body);
    } catch {
      res.writeHead(404, { "Content-Type": "text/plain" }).end(`not found: ${path}\n`);
    }
  });
  return new Promise((resolveListen, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      const address = server.address();
      resolveListen({ server, url: `http://${host}:${address.port}/` });
    });
  });
}

function option(args, name) {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const value = args[i + 1];
  if (value === undefined) throw new Error(`${name} needs a value`);
  return value;
}

function kib(n) {
  return `${(n / 1024).toFixed(1)} KiB`;
}

async function cli(argv) {
  const [command = "serve", ...args] = argv;
  if (command !== "build" && command !== "serve") {
    console.error("usage: node scripts/playground.mjs build|serve [--out DIR] [--port N]");
    process.exitCode = 2;
    return;
  }
  const out = resolve(option(args, "--out") ?? DEFAULT_OUT);
  const built = await buildPlayground({ out });
  console.log(`playground built in ${relative(process.cwd(), out) || "."}`);
  console.log(`core bundle (dist/index.js for the browser): ${built.coreBytes} bytes minified (${kib(built.coreBytes)}), ` +
    `${built.coreGzipBytes} bytes minified+gzipped (${kib(built.coreGzipBytes)}; budget ${kib(CORE_GZIP_BUDGET)})`);
  console.log(`model-files.js (the GGUF and safetensors readers, loaded when a model file is first opened): ${built.modelFilesBytes} bytes minified, ` +
    `${built.modelFilesGzipBytes} bytes minified+gzipped (${kib(built.modelFilesGzipBytes)})`);
  console.log(`gguf-job.js (the GGUF panel's quantization job, loaded when that panel is first used): ${built.ggufJobBytes} bytes minified, ` +
    `${built.ggufJobGzipBytes} bytes minified+gzipped (${kib(built.ggufJobGzipBytes)})`);
  console.log(`hf-job.js (the Hugging Face folder panel's job, loaded when that panel first runs one): ${built.hfJobBytes} bytes minified, ` +
    `${built.hfJobGzipBytes} bytes minified+gzipped (${kib(built.hfJobGzipBytes)})`);
  if (command === "build") return;
  const portText = option(args, "--port") ?? process.env.PORT ?? String(DEFAULT_PORT);
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535, got ${portText}`);
  const { url } = await servePlayground({ dir: out, port });
  console.log(`serving the playground at ${url}  (Ctrl-C stops)`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  cli(process.argv.slice(2)).catch((e) => {
    console.error(e instanceof Error ? e.message : e);
    process.exitCode = 1;
  });
}
