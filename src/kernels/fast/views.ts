/**
 * Views of a storage's bytes as another element type. Made once per call, never per element.
 * Every storage a fast kernel sees is a typed array whose byteOffset suits the view it asks for
 * (a storage's own element size is at least the view's, or the view is bytes).
 */
import type { Storage } from "../../dtype/table.js";

type Numeric = Exclude<Storage, string[]>;

export function u8View(a: Storage): Uint8Array {
  const t = a as Numeric;
  return new Uint8Array(t.buffer, t.byteOffset, t.byteLength);
}

export function u16View(a: Storage): Uint16Array {
  const t = a as Numeric;
  return new Uint16Array(t.buffer, t.byteOffset, t.byteLength >>> 1);
}

export function i32View(a: Storage): Int32Array {
  const t = a as Numeric;
  return new Int32Array(t.buffer, t.byteOffset, t.byteLength >>> 2);
}

export function u32View(a: Storage): Uint32Array {
  const t = a as Numeric;
  return new Uint32Array(t.buffer, t.byteOffset, t.byteLength >>> 2);
}

export function f32View(a: Storage): Float32Array {
  const t = a as Numeric;
  return new Float32Array(t.buffer, t.byteOffset, t.byteLength >>> 2);
}
