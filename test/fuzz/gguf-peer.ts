/**
 * llama.cpp's own GGUF reader as the GGUF fuzz class's reference: gguf_init_from_file of
 * node-llama-cpp's libggml-base (test-peers/, see test/support/ggml-peer.ts), called through koffi
 * with { no_alloc: true, ctx } as llama.cpp's model loader calls it, then the loader's own check
 * that every tensor's data lies within the file (llama_tensor_weight). What gguf.cpp logs when it
 * refuses is kept as the reason. It also decodes each tensor with ggml's to_float, for the values
 * tensorcast dequantized to be compared.
 *
 * gguf.cpp may abort the process (GGML_ASSERT): callers run this in a child process.
 */
import { closeSync, openSync, readSync, statSync } from "node:fs";
import { GGML_BASE, peerKoffi } from "../support/ggml-peer.js";
import { arrayText, decodeLenient, floatDigest, kvText, scalarFromBytes, tensorText, VALUE_TYPE_BYTES, type GgufView } from "./gguf-view.js";

export interface GgmlVerdict {
  /** gguf_init_from_file returned a context. */
  readonly accepted: boolean;
  /** What gguf.cpp logged, when it refused. */
  readonly reason?: string;
  /** llama.cpp's loader's refusal of a file gguf.cpp read (tensor data outside the file). */
  readonly loader?: string;
  readonly view?: GgufView;
  /** "index" -> digest of to_float's values, where ggml has a to_float and the data is in the file. */
  readonly floats?: Record<string, string>;
}


/** Binds the library (throws when test-peers is not installed; the test checks that first). */
export function ggmlGgufReader(): (path: string) => GgmlVerdict {
  const koffi = peerKoffi(GGML_BASE, "the ggml peer");
  if (typeof koffi === "string") throw new Error(koffi);
  const lib = koffi.load(GGML_BASE);
  koffi.struct("fuzz_gguf_init_params", { no_alloc: "bool", ctx: "void *" });
  const f = {
    init: lib.func("void *gguf_init_from_file(const char *fname, fuzz_gguf_init_params params)"),
    free: lib.func("void gguf_free(void *ctx)"),
    ggmlFree: lib.func("void ggml_free(void *ctx)"),
    version: lib.func("uint32_t gguf_get_version(void *ctx)"),
    alignment: lib.func("size_t gguf_get_alignment(void *ctx)"),
    dataOffset: lib.func("size_t gguf_get_data_offset(void *ctx)"),
    nKv: lib.func("int64_t gguf_get_n_kv(void *ctx)"),
    key: lib.func("void *gguf_get_key(void *ctx, int64_t id)"),
    kvType: lib.func("int gguf_get_kv_type(void *ctx, int64_t id)"),
    arrType: lib.func("int gguf_get_arr_type(void *ctx, int64_t id)"),
    arrN: lib.func("size_t gguf_get_arr_n(void *ctx, int64_t id)"),
    arrData: lib.func("void *gguf_get_arr_data(void *ctx, int64_t id)"),
    arrStr: lib.func("void *gguf_get_arr_str(void *ctx, int64_t id, size_t i)"),
    valData: lib.func("void *gguf_get_val_data(void *ctx, int64_t id)"),
    valStr: lib.func("void *gguf_get_val_str(void *ctx, int64_t id)"),
    nTensors: lib.func("int64_t gguf_get_n_tensors(void *ctx)"),
    tensorName: lib.func("void *gguf_get_tensor_name(void *ctx, int64_t id)"),
    tensorType: lib.func("int gguf_get_tensor_type(void *ctx, int64_t id)"),
    tensorNe: lib.func("void *gguf_get_tensor_ne(void *ctx, int64_t id)"),
    tensorOffset: lib.func("size_t gguf_get_tensor_offset(void *ctx, int64_t id)"),
    tensorSize: lib.func("size_t gguf_get_tensor_size(void *ctx, int64_t id)"),
    logSet: lib.func("void ggml_log_set(void *cb, void *user)"),
    traits: lib.func("void *ggml_get_type_traits(int type)"),
  };
  const strlen = koffi.load("libc.so.6").func("size_t strlen(void *s)");
  const Traits = koffi.struct("fuzz_ggml_type_traits", {
    type_name: "const char *", blck_size: "int64_t", blck_size_interleave: "int64_t", type_size: "size_t",
    is_quantized: "bool", to_float: "void *", from_float_ref: "void *",
  });
  const ToFloat = koffi.proto("void fuzz_ggml_to_float_t(const uint8_t *x, float *y, int64_t k)");
  let log: string[] = [];
  const LogCb = koffi.proto("void fuzz_ggml_log_cb(int level, const char *text, void *user)");
  const cb = koffi.register((_level: unknown, text: unknown) => {
    if (log.length < 20) log.push(String(text));
  }, koffi.pointer(LogCb));
  f.logSet(cb, null);

  const bytesAt = (p: unknown, n: number): Uint8Array => (n === 0 ? new Uint8Array(0) : new Uint8Array(koffi.view(p, n).slice(0)));
  const cstr = (p: unknown): string => decodeLenient(bytesAt(p, Number(strlen(p))));

  return (path: string): GgmlVerdict => {
    log = [];
    const slot = koffi.alloc("void *", 1);
    try {
      const ctx = f.init(path, { no_alloc: true, ctx: slot });
      if (ctx === null) return { accepted: false, reason: log.join("").trim().split("\n").slice(0, 3).join(" | ").slice(0, 400) };
      const data = koffi.decode(slot, "void *");
      try {
        const kv: string[] = [];
        for (let i = 0; i < Number(f.nKv(ctx)); i++) {
          const type = Number(f.kvType(ctx, i));
          const key = cstr(f.key(ctx, i));
          let value: string;
          if (type === 9) {
            const item = Number(f.arrType(ctx, i));
            const n = Number(f.arrN(ctx, i));
            if (item === 8) value = arrayText(item, n, Array.from({ length: n }, (_, j) => cstr(f.arrStr(ctx, i, j))));
            else value = arrayText(item, n, bytesAt(f.arrData(ctx, i), n * VALUE_TYPE_BYTES[item]));
          } else if (type === 8) value = cstr(f.valStr(ctx, i));
          else value = scalarFromBytes(type, bytesAt(f.valData(ctx, i), VALUE_TYPE_BYTES[type]));
          kv.push(kvText(key, type, value));
        }
        const size = statSync(path).size;
        const base = BigInt(f.dataOffset(ctx) as number | bigint);
        const tensors: string[] = [];
        const floats: Record<string, string> = {};
        let loader: string | undefined;
        const fd = openSync(path, "r");
        try {
          for (let i = 0; i < Number(f.nTensors(ctx)); i++) {
            const name = cstr(f.tensorName(ctx, i));
            const type = Number(f.tensorType(ctx, i));
            const ne = koffi.decode(f.tensorNe(ctx, i), "int64_t", 4) as (number | bigint)[];
            const offset = BigInt(f.tensorOffset(ctx, i) as number | bigint);
            const bytes = BigInt(f.tensorSize(ctx, i) as number | bigint);
            tensors.push(tensorText(name, type, ne.map(BigInt), offset, bytes));
            const offs = base + offset;
            if (offs + bytes > BigInt(size)) {
              loader ??= `tensor '${name}' data is not within the file bounds, model is corrupted or incomplete`;
              continue;
            }
            const t = koffi.decode(f.traits(type), Traits) as { blck_size: number | bigint; type_size: number | bigint; to_float: unknown };
            if (t.to_float === null || t.to_float === 0 || t.to_float === 0n || bytes === 0n) continue;
            const raw = new Uint8Array(Number(bytes));
            readSync(fd, raw, 0, raw.length, Number(offs));
            const out = new Float32Array((raw.length / Number(t.type_size)) * Number(t.blck_size));
            koffi.call(t.to_float, ToFloat, raw, out, out.length);
            floats[String(i)] = floatDigest(out);
          }
        } finally {
          closeSync(fd);
        }
        const view: GgufView = { version: Number(f.version(ctx)), alignment: Number(f.alignment(ctx)), dataOffset: Number(base), kv, tensors };
        return { accepted: true, loader, view, floats };
      } finally {
        f.free(ctx);
        if (data !== null) f.ggmlFree(data);
      }
    } finally {
      koffi.free(slot);
    }
  };
}
