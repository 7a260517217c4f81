/**
 * Arenas: tensors whose storage lives in one fixed-size WebAssembly memory, so that casts between
 * them run the WebAssembly kernels in place, without the chunk copies ordinary arrays need
 * (docs/performance.md, "Resident arenas").
 *
 * The promises tensors make hold inside an arena:
 * - `t.data` is the usual typed array (over the arena's memory, at its own offset);
 * - the memory is never grown, so no view of it is ever detached by a cast;
 * - bytes are handed out once: nothing is freed tensor by tensor (`dispose()` of an arena tensor
 *   does nothing), so two live tensors never share bytes and nothing a user holds is overwritten;
 * - `reset()` reclaims the whole arena at once, and first detaches every view of it anyone holds
 *   (each reads as empty, and tensors from before are refused as disposed), so old views can never
 *   see the bytes' next owner. Otherwise the memory goes when the arena and every tensor over it
 *   are unreachable.
 * A shared arena (`createArena(bytes, { shared: true })`) lives in a shared WebAssembly memory:
 * `t.data` is a view of a SharedArrayBuffer, and castIntoAsync splits casts between its tensors over
 * worker threads that run the kernels in place on the same memory. Views of shared memory cannot be
 * detached (`grow(0)` leaves them valid), so `reset()` could not keep the promise above: a shared
 * arena refuses it (ARENA_SHARED) and is reclaimed only when it and every tensor and view over it
 * are unreachable (castAsync's workers each hold the last shared memory they worked on until they
 * work on another or the pool is closed).
 * The cost: `t.data.buffer` is the whole arena (use `t.bytes()` or `t.data`, which start at the
 * tensor's own offset), and a WebAssembly memory's buffer cannot be transferred to a worker.
 *
 * Browser-safe: no Node built-ins. Works wherever WebAssembly does (Node 20+, Bun, Deno, browsers);
 * without WebAssembly SIMD the casts take the ordinary kernels.
 */
import { describe } from "./args.js";
import { TensorcastError } from "./errors.js";
import { dtype, type DTypeLike, type DTypeName, type Storage, type StorageOf } from "./dtype/table.js";
import { residentMemory, RESIDENT_MAX_BYTES, type ResidentMemory } from "./kernels/wasm/resident.js";
import { castInto, type CastOptions } from "./ops/cast.js";
import { expectStorage, shapeSize, storageLength, Tensor, TYPED_ARRAYS } from "./tensor.js";

/**
 * Each tensor starts on a 64-byte boundary: a cache line, and a multiple of every element size,
 * so the kernels' vector loads of one tensor never share a line with another's stores.
 */
const ALIGN = 64;

/**
 * A fixed-size region of WebAssembly memory that tensors are allocated from (`createArena`).
 * Casts whose input and output are both in one arena run in place (castInto, `arena.cast`).
 */
export class Arena {
  /** Bytes the arena can hand out (the size asked for, rounded up to 64 KiB pages). */
  readonly capacity: number;
  readonly #memory: ResidentMemory;
  #next = 0;
  /** The end of the bytes ever handed out: above it the memory is still all zeros. */
  #touched = 0;

  /** @internal Use createArena. */
  constructor(memory: ResidentMemory) {
    this.#memory = memory;
    this.capacity = memory.capacity;
  }

  /** Bytes handed out since the arena was made or last reset (alignment padding included). */
  get used(): number {
    return this.#next;
  }

  /**
   * Whether the arena is shared (createArena's `shared`): its storage is a SharedArrayBuffer, it has no reset.
   * @example createArena(1 << 20, { shared: true }).shared // true
   */
  get shared(): boolean {
    return this.#memory.shared !== undefined;
  }

  /** Whether casts between this arena's tensors run the WebAssembly kernels in place here (false without WebAssembly SIMD). */
  get inPlace(): boolean {
    return this.#memory.inPlace;
  }

  /**
   * A zero-filled tensor in this arena.
   * @example const out = arena.zeros("float16", [1024, 1024]); castInto(x, out) // in place if x is in the arena too
   * @throws TensorcastError ARENA_FULL when the arena lacks the room, UNSUPPORTED_TYPE for strings.
   */
  zeros<N extends DTypeName>(type: DTypeLike<N>, shape: readonly number[]): Tensor<N> {
    const touched = this.#touched;
    const t = this.#allocate(type, shape);
    const bytes = t.bytes();
    // Bytes above the high-water mark were never handed out since the memory was made: still zeros.
    bytes.fill(0, 0, Math.min(bytes.length, Math.max(0, touched - bytes.byteOffset)));
    return t;
  }

  /**
   * A copy of `x` in this arena (same type, shape and bytes).
   * @example const xa = arena.from(Tensor.fromValues([1.5, -2], "float32")); xa.toValues() // [1.5, -2]
   * @throws TensorcastError ARENA_FULL, UNSUPPORTED_TYPE for strings, INVALID_DATA for a disposed tensor.
   */
  from<N extends DTypeName>(x: Tensor<N>): Tensor<N> {
    if (!(x instanceof Tensor)) throw new TensorcastError("INVALID_DATA", `arena.from expects a Tensor, got ${describe(x)}`);
    expectStorage(x, "arena.from's input");
    const t = this.#allocate(x.dtype, x.shape);
    t.bytes().set(x.bytes());
    return t;
  }

  /**
   * `cast(x, to, opts)` with the output allocated in this arena: in place when `x` is in it too.
   * The bytes are cast()'s. If the cast is refused, nothing is allocated.
   * @example const y = arena.cast(arena.from(x), "float16"); // y.data is a Uint16Array in the arena
   * @throws TensorcastError as castInto; ARENA_FULL; UNSUPPORTED_TYPE for a string target.
   */
  cast<N extends DTypeName>(x: Tensor, to: DTypeLike<N>, opts: CastOptions = {}): Tensor<N> {
    const start = this.#next;
    const out = this.#allocate(to, x instanceof Tensor ? x.shape : []);
    try {
      return castInto(x, out, opts);
    } catch (e) {
      // Nobody saw `out`: its bytes can go to the next allocation.
      this.#next = start;
      throw e;
    }
  }

  /**
   * Reclaims the whole arena. Every tensor allocated from it so far, and every view of its memory
   * anyone holds, is detached first: their `data` reads as empty (length 0), the tensors count as
   * disposed (cast and castInto refuse them), and no old view can see the bytes handed out next.
   * Tensors allocated afterwards work as usual. Cheap: nothing is unmapped or cleared, so the
   * pages stay faulted in for the next round.
   * @example const x = arena.from(t); arena.reset(); x.data.length // 0
   * @throws TensorcastError ARENA_SHARED on a shared arena, whose views cannot be detached: it is
   *         reclaimed by garbage collection only (create a new one for the next round).
   */
  reset(): void {
    if (this.shared) {
      throw new TensorcastError(
        "ARENA_SHARED",
        "reset() of a shared arena is refused: views of shared memory cannot be detached, so tensors and views held from before " +
          "would see the bytes handed out next. A shared arena is reclaimed when it and its tensors are unreachable; " +
          "create a new arena instead (or a non-shared one, createArena(bytes), which can be reset)",
      );
    }
    this.#memory.reset();
    this.#next = 0;
  }

  #allocate<N extends DTypeName>(type: DTypeLike<N>, shape: readonly number[]): Tensor<N> {
    const t = dtype(type);
    if (t.array === "Array") {
      throw new TensorcastError("UNSUPPORTED_TYPE", "an arena holds fixed-width types; string tensors live in ordinary arrays (use cast())");
    }
    const size = shapeSize(shape);
    const ctor = TYPED_ARRAYS[t.array];
    const length = storageLength(t, size);
    const bytes = length * ctor.BYTES_PER_ELEMENT;
    const offset = Math.ceil(this.#next / ALIGN) * ALIGN;
    if (offset + bytes > this.capacity) {
      throw new TensorcastError(
        "ARENA_FULL",
        `the arena has ${Math.max(0, this.capacity - offset)} of ${this.capacity} bytes free; ${t.name} ${JSON.stringify(shape)} needs ${bytes}. ` +
          "reset() it (which detaches every tensor in it) or create a larger one",
      );
    }
    this.#next = offset + bytes;
    this.#touched = Math.max(this.#touched, this.#next);
    const data = new ctor(this.#memory.buffer, offset, length) as Storage;
    return Tensor.fromStorage(data as StorageOf<N>, t, shape);
  }
}

/**
 * A new arena of at least `bytes` bytes (rounded up to 64 KiB pages; at most 4 GiB - 64 KiB), in
 * a WebAssembly memory of its own that never grows. Tensors made by `arena.zeros`, `arena.from`
 * and `arena.cast` live in it; casts between them run in place. When it is full, allocation throws
 * ARENA_FULL (it never falls back to ordinary memory silently: that would lose the in-place speed
 * without a word); `reset()` reclaims it all at once.
 *
 * With `{ shared: true }`, the memory is a shared WebAssembly memory (`t.data` over a
 * SharedArrayBuffer): castIntoAsync (tensorcast/node, tensorcast/web) then converts between its
 * tensors on several threads, each in place. A shared arena cannot be reset (ARENA_SHARED): it is
 * reclaimed by garbage collection.
 *
 * @example
 * const shared = createArena(48 << 20, { shared: true }); // for castIntoAsync(x, y, { threads: 2 })
 * const arena = createArena(48 << 20);
 * const x = arena.from(weights);           // float32, 8 Mi elements: 32 MiB
 * const y = arena.zeros("float16", x.shape); // 16 MiB
 * castInto(x, y);                           // the kernels run where x and y are: no copies
 * @throws TensorcastError INVALID_SHAPE for a size that is not an integer in [0, 4 GiB - 64 KiB]
 *         or that the platform cannot reserve; UNSUPPORTED_PLATFORM without WebAssembly, or for a
 *         shared arena where there is no shared memory (a page that is not cross-origin isolated);
 *         INVALID_ATTRIBUTE for options other than `{ shared?: boolean }`.
 */
export function createArena(bytes: number, opts: { shared?: boolean } = {}): Arena {
  if (typeof opts !== "object" || opts === null || (opts.shared !== undefined && typeof opts.shared !== "boolean")) {
    throw new TensorcastError("INVALID_ATTRIBUTE", `createArena's options are { shared?: boolean }, got ${describe(opts)}`);
  }
  const shared = opts.shared === true;
  if (typeof bytes !== "number" || !Number.isSafeInteger(bytes) || bytes < 0 || bytes > RESIDENT_MAX_BYTES) {
    throw new TensorcastError("INVALID_SHAPE", `an arena's size is a byte count in [0, ${RESIDENT_MAX_BYTES}], got ${describe(bytes)}`);
  }
  let memory: ResidentMemory | undefined;
  try {
    memory = residentMemory(bytes, { shared });
  } catch (e) {
    if (shared && e instanceof TypeError) throw noSharedMemory(e.message);
    if (!(e instanceof RangeError)) throw e;
    throw new TensorcastError("INVALID_SHAPE", `an arena of ${bytes} bytes is more than this platform can reserve (${e.message})`);
  }
  if (!memory) throw new TensorcastError("UNSUPPORTED_PLATFORM", "arenas need WebAssembly, which this runtime does not have");
  return new Arena(memory);
}

function noSharedMemory(why: string): TensorcastError {
  return new TensorcastError(
    "UNSUPPORTED_PLATFORM",
    `a shared arena needs shared WebAssembly memory and SharedArrayBuffer, which this runtime refused (${why}). ` +
      "A browser page needs cross-origin isolation (the headers Cross-Origin-Opener-Policy: same-origin and " +
      "Cross-Origin-Embedder-Policy: require-corp); elsewhere use createArena(bytes) without shared",
  );
}
