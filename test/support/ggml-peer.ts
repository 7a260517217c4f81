/**
 * llama.cpp's own ggml, as the live peer of the GGML tests: node-llama-cpp ships libggml-base
 * (test-peers/, installed apart from tensorcast: `cd test-peers && npm ci`), and koffi calls its
 * `ggml_get_type_traits(type)->to_float` (dequantize_row_*) on our bytes.
 *
 * Where test-peers is not installed (another platform, a plain clone) the peer is missing with the
 * reason; `peerSkip` turns that into a skip, except under CI=true, where the test runs and fails.
 */
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root, from build/test/support. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const PEERS = join(ROOT, "test-peers");
export const GGML_BASE = join(PEERS, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64", "libggml-base.so");

export interface GgmlPeer {
  /** ggml's type_name, blck_size and type_size of a type id. */
  traits(id: number): { name: string; blockSize: number; typeSize: number; hasToFloat: boolean };
  /** ggml's to_float of `bytes` (whole blocks of type `id`) into `n` float32 values. */
  toFloat(id: number, bytes: Uint8Array, n: number): Float32Array;
  /** The same into `out` (one element per value). */
  toFloatInto(id: number, bytes: Uint8Array, out: Float32Array): void;
  /**
   * gguf.cpp reads the GGUF file `from` (gguf_init_from_file, its data loaded) and writes it to `to`
   * (gguf_write_to_file): llama.cpp's own layout of the same content. False where gguf.cpp refuses
   * the file or the write fails. gguf.cpp aborts the process on arrays of arrays (gguf_set_kv),
   * so a file that has them must not be given.
   */
  ggufRewrite(from: string, to: string): boolean;
  /**
   * ggml_quantize_chunk(type, rows, dst, 0, nrows, rowLength, imatrix): the bytes llama-quantize
   * writes for these rows (ggml_quantize_init first, as the IQ types' grids need).
   */
  quantize(id: number, rows: Float32Array, rowLength: number, imatrix?: Float32Array): Uint8Array;
  /** ggml_quantize_requires_imatrix(type). */
  requiresImatrix(id: number): boolean;
}

/** What the peers use of koffi (test-peers' FFI package). */
export interface Koffi {
  load(path: string): { func(signature: string): (...a: unknown[]) => unknown };
  alloc(type: string, count: number): unknown;
  free(ptr: unknown): void;
  struct(name: string, fields: Record<string, string>): unknown;
  proto(signature: string): unknown;
  pointer(type: unknown): unknown;
  register(fn: (...a: unknown[]) => void, type: unknown): unknown;
  decode(ptr: unknown, type: unknown, len?: number): unknown;
  view(ptr: unknown, len: number): ArrayBuffer;
  call(ptr: unknown, type: unknown, ...args: unknown[]): unknown;
}

/**
 * koffi from test-peers/, to call `library` (one of node-llama-cpp's linux-x64 libraries), or why
 * it cannot be had here; `what` names the peer in that reason.
 */
export function peerKoffi(library: string, what: string): Koffi | string {
  if (process.platform !== "linux" || process.arch !== "x64") return `${what} is node-llama-cpp's linux-x64 build; this is ${process.platform}-${process.arch}`;
  if (!existsSync(library)) return `${library} is not installed (cd test-peers && npm ci)`;
  try {
    return createRequire(join(PEERS, "package.json"))("koffi") as Koffi;
  } catch (e) {
    return `koffi does not load from test-peers (${(e as Error).message.split("\n")[0]})`;
  }
}

let cached: GgmlPeer | string | undefined;

/** The peer, or why it is missing. */
export function ggmlPeer(): GgmlPeer | string {
  if (cached !== undefined) return cached;
  const koffi = peerKoffi(GGML_BASE, "the ggml peer");
  if (typeof koffi === "string") return (cached = koffi);
  const lib = koffi.load(GGML_BASE);
  const Traits = koffi.struct("ggml_type_traits", {
    type_name: "const char *", blck_size: "int64_t", blck_size_interleave: "int64_t", type_size: "size_t",
    is_quantized: "bool", to_float: "void *", from_float_ref: "void *",
  });
  const getTraits = lib.func("const ggml_type_traits *ggml_get_type_traits(int type)");
  const ToFloat = koffi.proto("void ggml_to_float_t(const uint8_t *x, float *y, int64_t k)");
  const quantizeChunk = lib.func("size_t ggml_quantize_chunk(int type, const float *src, uint8_t *dst, int64_t start, int64_t nrows, int64_t n_per_row, const float *imatrix)");
  const quantizeInit = lib.func("void ggml_quantize_init(int type)");
  const requiresImatrix = lib.func("bool ggml_quantize_requires_imatrix(int type)");
  const rowSize = lib.func("size_t ggml_row_size(int type, int64_t ne)");
  const traitsOf = (id: number): Record<string, unknown> => koffi.decode(getTraits(id), Traits) as Record<string, unknown>;
  koffi.struct("gguf_init_params", { no_alloc: "bool", ctx: "void *" });
  const gguf = {
    init: lib.func("void *gguf_init_from_file(const char *fname, gguf_init_params params)"),
    empty: lib.func("void *gguf_init_empty()"),
    setKv: lib.func("void gguf_set_kv(void *ctx, void *src)"),
    nTensors: lib.func("int64_t gguf_get_n_tensors(void *ctx)"),
    tensorName: lib.func("const char *gguf_get_tensor_name(void *ctx, int64_t id)"),
    addTensor: lib.func("void gguf_add_tensor(void *ctx, void *tensor)"),
    write: lib.func("bool gguf_write_to_file(void *ctx, const char *fname, bool only_meta)"),
    free: lib.func("void gguf_free(void *ctx)"),
    getTensor: lib.func("void *ggml_get_tensor(void *ctx, const char *name)"),
    ggmlFree: lib.func("void ggml_free(void *ctx)"),
  };
  cached = {
    traits(id) {
      const t = traitsOf(id);
      return { name: String(t.type_name), blockSize: Number(t.blck_size), typeSize: Number(t.type_size), hasToFloat: t.to_float !== null && t.to_float !== 0n && t.to_float !== 0 };
    },
    toFloat(id, bytes, n) {
      const out = new Float32Array(n);
      (cached as GgmlPeer).toFloatInto(id, bytes, out);
      return out;
    },
    toFloatInto(id, bytes, out) {
      koffi.call(traitsOf(id).to_float, ToFloat, bytes, out, out.length);
    },
    ggufRewrite(from, to) {
      // As llama.cpp's own tools copy a model (llama_model_quantize, gguf-split): a new context
      // given the file's key-value pairs (gguf_set_kv) and its tensors in order (gguf_add_tensor,
      // their data in the ggml_context gguf_init_from_file filled through `slot`), then written.
      const slot = koffi.alloc("void *", 1);
      try {
        const src = gguf.init(from, { no_alloc: false, ctx: slot });
        if (src === null) return false;
        const data = koffi.decode(slot, "void *" as never) as unknown;
        const dst = gguf.empty();
        try {
          gguf.setKv(dst, src);
          const n = Number(gguf.nTensors(src));
          for (let i = 0; i < n; i++) gguf.addTensor(dst, gguf.getTensor(data, gguf.tensorName(src, i) as string));
          return gguf.write(dst, to, false) === true;
        } finally {
          gguf.free(dst);
          gguf.free(src);
          gguf.ggmlFree(data);
        }
      } finally {
        koffi.free(slot);
      }
    },
    quantize(id, rows, rowLength, imatrix) {
      quantizeInit(id);
      const nrows = rows.length / rowLength;
      const out = new Uint8Array(Number(rowSize(id, rowLength)) * nrows);
      const wrote = Number(quantizeChunk(id, rows, out, 0, nrows, rowLength, imatrix ?? null));
      if (wrote !== out.length) throw new Error(`ggml_quantize_chunk wrote ${wrote} bytes, expected ${out.length}`);
      return out;
    },
    requiresImatrix(id) {
      return Boolean(requiresImatrix(id));
    },
  };
  return cached;
}

/** A test's skip option for a missing peer: the reason, or false (run) when present or under CI=true. */
export function peerSkip(peer: GgmlPeer | string): string | false {
  return typeof peer === "string" && process.env.CI !== "true" ? peer : false;
}
