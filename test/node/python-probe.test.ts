/**
 * The python probe (test/support/python.ts) says a python without onnx's checker is missing, even
 * when `import onnx` succeeds because Debian's libonnx-testdata made onnx a namespace package; and
 * it is the only probe the tests use (issue 28).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { ONNX_MODULES, PYTHON, pythonMissing } from "../support/python.js";
import { ROOT, scratch } from "./helpers.js";

test("a namespace package named onnx (libonnx-testdata without python3-onnx) is not onnx", { skip: !existsSync(PYTHON) && `${PYTHON} is not installed` }, () => {
  const dir = scratch();
  // What libonnx-testdata installs: data folders, no __init__.py. -S keeps the real onnx (if any) off the path.
  mkdirSync(join(dir, "onnx", "backend", "test", "data", "node"), { recursive: true });
  const python = [PYTHON, "-S"];
  const env = { ...process.env, PYTHONPATH: dir };
  const bare = spawnSync(PYTHON, ["-S", "-c", "import onnx; print(onnx.__path__)"], { encoding: "utf8", env });
  assert.equal(bare.status, 0, `the trap: import onnx succeeds on the data folder (${bare.stderr})`);
  assert.match(bare.stdout, /_NamespacePath/);
  const why = pythonMissing(ONNX_MODULES, python, env);
  assert.match(why ?? "", /^\/usr\/bin\/python3 -S cannot import onnx\.checker, onnx\.numpy_helper, numpy \(ModuleNotFoundError: No module named 'onnx\.checker'\); install python3-onnx/);
});

test("every python-comparing test skips through the one probe, none with an import of its own", () => {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith(".ts") && !path.endsWith(join("support", "python.ts"))) {
        // A probe: python run on nothing but an import statement.
        if (/\(\s*(PYTHON|"python3"|"\/usr\/bin\/python3")\s*,\s*\[\s*"-c"\s*,\s*"import [\w., ]+"\s*\]/.test(readFileSync(path, "utf8"))) found.push(relative(ROOT, path));
      }
    }
  };
  walk(join(ROOT, "test"));
  assert.deepEqual(found, []);
});
