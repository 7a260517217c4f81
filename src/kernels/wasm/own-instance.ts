/**
 * A WebAssembly module that declares its own memory, instantiated where it can be: the exports, or
 * null where the engine has no WebAssembly, does not validate the module (no SIMD) or refuses to
 * compile it (a Content-Security-Policy without 'wasm-unsafe-eval'), for callers that then take
 * their TypeScript path. `build` runs only where WebAssembly is there.
 *
 * Browser-safe.
 */
import type { WasmApi } from "./index.js";

export function ownInstance(build: () => Uint8Array): Record<string, unknown> | null {
  try {
    const w = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;
    if (!w) return null;
    const code = build();
    return w.validate(code) ? new w.Instance(new w.Module(code), {}).exports : null;
  } catch {
    return null;
  }
}
