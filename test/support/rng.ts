/**
 * xorshift32 with a fixed seed, shared by the tests and the benchmarks: the same "random" inputs on
 * every run, so a failure can be reproduced and timings compare like with like.
 */
export class Rng {
  private s: number;
  constructor(seed: number) {
    // xorshift never leaves the all-zero state.
    this.s = seed >>> 0 || 1;
  }
  u32(): number {
    let s = this.s;
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    this.s = s >>> 0;
    return this.s;
  }
  below(n: number): number {
    return this.u32() % n;
  }
  u64(): bigint {
    return (BigInt(this.u32()) << 32n) | BigInt(this.u32());
  }
}
