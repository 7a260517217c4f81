/**
 * A kernel's v128 locals and its splatted 32-bit constants, for kernels built with encoder.ts: each
 * constant is one local, set once before the loop from the kernel's i32 parameter `zero` (a value
 * V8 cannot fold, so it keeps the splats in registers rather than rebuilding each inside the loop).
 *
 * Browser-safe.
 */
import { get, i32, i32Add, i32x4Splat, set, type Code } from "./encoder.js";

const f32BitsOf = (v: number): number => new Uint32Array(new Float32Array([v]).buffer)[0]!;

export class V128Locals {
  private next: number;
  private readonly constants = new Map<number, number>();
  /** `first`: the index of the first v128 local (after the parameters and i32 locals); `zero`: the parameter holding 0. */
  constructor(private readonly first: number, private readonly zero: number) {
    this.next = first;
  }
  /** A fresh v128 local. */
  v(): number {
    return this.next++;
  }
  /** The splat of 32-bit word `w`. */
  c(w: number): Code {
    w |= 0;
    let i = this.constants.get(w);
    if (i === undefined) {
      i = this.v();
      this.constants.set(w, i);
    }
    return get(i);
  }
  /** The splat of float32 `v`. */
  f(v: number): Code {
    return this.c(f32BitsOf(v));
  }
  /** How many v128 locals the kernel declares. */
  get count(): number {
    return this.next - this.first;
  }
  /** The code that builds every constant asked for so far, to run before the kernel's loop. */
  prologue(): Code[] {
    const out: Code[] = [];
    for (const [w, i] of this.constants) out.push(set(i, i32x4Splat(i32Add(get(this.zero), i32(w)))));
    return out;
  }
}
