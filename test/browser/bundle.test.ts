// suite: full
/**
 * The browser bundle of the core (what the playground loads as tensorcast.js): it builds, stays
 * within its size budget, works as an ES module, and the build fails on any Node built-in import.
 * Needs no browser, so it runs everywhere.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { OUTPUT, playgroundScript } from "./support.js";

test("the core bundle (dist/index.js for the browser) builds, and is within its gzip budget", async (t) => {
  const script = await playgroundScript();
  const core = await script.bundleCore();
  t.diagnostic(`core bundle: ${core.bytes} bytes minified, ${core.gzipBytes} bytes minified+gzipped`);
  assert.ok(core.gzipBytes <= script.CORE_GZIP_BUDGET, `${core.gzipBytes} > budget ${script.CORE_GZIP_BUDGET}`);

  // The bundle is a working ES module with the library's API.
  await mkdir(OUTPUT, { recursive: true });
  const file = join(OUTPUT, "tensorcast.bundle.mjs");
  await writeFile(file, core.code);
  const lib = (await import(pathToFileURL(file).href)) as typeof import("../../src/index.js");
  const x = lib.Tensor.fromValues([1.5, 448, 1000, NaN], "float32");
  assert.deepEqual([...lib.cast(x, "float8e4m3fn").bytes()], [0x3c, 0x7e, 0x7e, 0x7f]);
  assert.equal(lib.DTYPES.length, 28);
});

test("a Node built-in anywhere in the browser bundle fails the build, naming the importer", async () => {
  const script = await playgroundScript();
  const dir = join(OUTPUT, "builtin-leak");
  await mkdir(dir, { recursive: true });
  const cases: [file: string, source: string, builtin: string][] = [
    ["prefixed.js", `import { readFileSync } from "node:fs";\nexport const f = readFileSync;\n`, "node:fs"],
    ["bare.js", `import { createHash } from "crypto";\nexport const h = createHash;\n`, "crypto"],
    ["subpath.js", `import { readFile } from "fs/promises";\nexport const r = readFile;\n`, "fs/promises"],
  ];
  for (const [file, source] of cases) await writeFile(join(dir, file), source);
  // The real core, plus one module deep inside it that reaches for Node.
  await writeFile(join(dir, "leaky-core.js"),
    `export * from ${JSON.stringify(join(script.ROOT, "dist", "index.js"))};\nexport * from "./prefixed.js";\n`);
  cases.push(["leaky-core.js", "", "node:fs"]);
  for (const [file, , builtin] of cases) {
    await assert.rejects(script.bundleCore({ entry: join(dir, file) }), (e: Error) => {
      assert.match(e.message, new RegExp(`Node built-in "${builtin}" imported by `));
      assert.match(e.message, /must not use Node built-ins/);
      return true;
    }, `${file} bundled although it imports ${builtin}`);
  }
  assert.equal(script.isNodeBuiltin("node:test"), true);
  assert.equal(script.isNodeBuiltin("path"), true);
  assert.equal(script.isNodeBuiltin("./path.js"), false);
  assert.equal(script.isNodeBuiltin("fast-check"), false);
});
