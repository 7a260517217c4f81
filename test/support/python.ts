/**
 * The one probe for the python modules tests compare against (Debian's python3-onnx 1.12 and
 * python3-numpy). It imports what the tests use, not just `onnx`: Debian's libonnx-testdata alone
 * installs /usr/lib/python3/dist-packages/onnx/backend/test/data, which `import onnx` finds as a
 * namespace package with no checker, so a bare `import onnx` probe passes and the tests then fail
 * "module 'onnx' has no attribute 'checker'" (issue 28).
 */
import { spawnSync } from "node:child_process";

export const PYTHON = "/usr/bin/python3";

/** What the onnx tests import: the checker, numpy_helper (to_array) and numpy. */
export const ONNX_MODULES = "onnx.checker, onnx.numpy_helper, numpy";

/**
 * Why `python` (a command and its first arguments; a bare name is looked up in PATH) cannot
 * import `modules`, for a test's skip reason, or undefined when it can.
 * @example pythonMissing("onnx.checker, onnx.numpy_helper, numpy") // undefined with python3-onnx installed
 */
export function pythonMissing(modules: string, python: readonly string[] = [PYTHON], env?: NodeJS.ProcessEnv): string | undefined {
  const r = spawnSync(python[0], [...python.slice(1), "-c", `import ${modules}`], { encoding: "utf8", env });
  if (r.error) return `${python[0]} does not run (${r.error.message})`;
  if (r.status === 0) return undefined;
  const why = (r.stderr ?? "").trim().split("\n").pop() ?? "";
  const hint = modules.includes("onnx")
    ? "; install python3-onnx and python3-numpy (libonnx-testdata alone leaves onnx a data-only namespace package)"
    : "";
  return `${python.join(" ")} cannot import ${modules} (${why})${hint}`;
}

let onnx: string | undefined | false;

/** pythonMissing(ONNX_MODULES) for PYTHON, probed once per process. */
export function onnxMissing(): string | undefined {
  onnx ??= pythonMissing(ONNX_MODULES) ?? false;
  return onnx || undefined;
}
