/**
 * The globals a pickle may name: exactly the keys of torch 2.13's `_get_allowed_globals()`
 * (torch/_weights_only_unpickler.py), which `torch.load(weights_only=True)` accepts without an
 * allow-list of the user's. Naming one runs nothing; what each one does when called is rebuild.ts'.
 * sys, os, posix and nt are refused first, as torch blocks them whatever the allow-list says.
 */

/** torch dtype (as `str(dtype)` spells it, without "torch.") -> tensorcast type, or why not. */
export const TORCH_DTYPES: Readonly<Record<string, { readonly to?: string; readonly why?: string }>> = {
  float64: { to: "float64" }, float32: { to: "float32" }, float16: { to: "float16" }, bfloat16: { to: "bfloat16" },
  int64: { to: "int64" }, int32: { to: "int32" }, int16: { to: "int16" }, int8: { to: "int8" },
  uint64: { to: "uint64" }, uint32: { to: "uint32" }, uint16: { to: "uint16" }, uint8: { to: "uint8" }, bool: { to: "bool" },
  float8_e4m3fn: { to: "float8e4m3fn" }, float8_e5m2: { to: "float8e5m2" },
  float8_e4m3fnuz: { to: "float8e4m3fnuz" }, float8_e5m2fnuz: { to: "float8e5m2fnuz" }, float8_e8m0fnu: { to: "float8e8m0" },
  complex128: { why: "complex tensors are not read" }, complex64: { why: "complex tensors are not read" },
  complex32: { why: "complex tensors are not read" },
  float4_e2m1fn_x2: { why: "torch's packed float4 pairs are not read" },
  qint8: { why: "quantized tensors are not read" }, qint32: { why: "quantized tensors are not read" },
  quint8: { why: "quantized tensors are not read" }, quint4x2: { why: "quantized tensors are not read" },
  quint2x4: { why: "quantized tensors are not read" },
  bits8: { why: "torch's untyped bits types are not read" }, bits16: { why: "torch's untyped bits types are not read" },
  bits1x8: { why: "torch's untyped bits types are not read" }, bits2x4: { why: "torch's untyped bits types are not read" },
  bits4x2: { why: "torch's untyped bits types are not read" },
  ...Object.fromEntries([1, 2, 3, 4, 5, 6, 7].flatMap((b) => [
    [`int${b}`, { why: "torch's sub-byte shell types hold no storage of their own" }],
    [`uint${b}`, { why: "torch's sub-byte shell types hold no storage of their own" }],
  ])),
};

/** Legacy typed storage classes (`torch.FloatStorage`, also under torch.cuda) -> their torch dtype. */
export const STORAGE_DTYPES: Readonly<Record<string, string>> = {
  DoubleStorage: "float64", FloatStorage: "float32", HalfStorage: "float16", BFloat16Storage: "bfloat16",
  LongStorage: "int64", IntStorage: "int32", ShortStorage: "int16", CharStorage: "int8", ByteStorage: "uint8",
  BoolStorage: "bool", ComplexDoubleStorage: "complex128", ComplexFloatStorage: "complex64",
  QInt8Storage: "qint8", QInt32Storage: "qint32", QUInt8Storage: "quint8", QUInt4x2Storage: "quint4x2", QUInt2x4Storage: "quint2x4",
};

/** The legacy tensor classes torch._tensor_classes lists (torch, torch.cuda; sparse without Bool/BFloat16 on CPU... see below). */
const TENSOR_CLASSES = ["BFloat16", "Bool", "Byte", "Char", "Double", "Float", "Half", "Int", "Long", "Short"];
const SPARSE_CLASSES = ["BFloat16", "Byte", "Char", "Double", "Float", "Half", "Int", "Long", "Short"];

/** The rebuild functions of torch._utils that the allow-list names. */
export const REBUILD_FUNCTIONS = [
  "_rebuild_parameter", "_rebuild_parameter_with_state", "_rebuild_qtensor", "_rebuild_tensor", "_rebuild_tensor_v2",
  "_rebuild_tensor_v3", "_rebuild_sparse_tensor", "_rebuild_meta_tensor_no_storage", "_rebuild_nested_tensor",
  "_rebuild_wrapper_subclass", "_rebuild_device_tensor_from_numpy", "_rebuild_device_tensor_from_cpu_tensor",
] as const;

const ALLOWED: ReadonlySet<string> = new Set([
  "collections.OrderedDict", "collections.Counter", "torch.nn.parameter.Parameter", "torch.serialization._get_layout",
  "torch.Size", "torch.Tensor", "torch.device", "_codecs.encode", "builtins.bytearray", "builtins.set", "builtins.complex",
  ...Object.keys(TORCH_DTYPES).map((d) => `torch.${d}`),
  ...TENSOR_CLASSES.flatMap((c) => [`torch.${c}Tensor`, `torch.cuda.${c}Tensor`]),
  ...SPARSE_CLASSES.flatMap((c) => [`torch.sparse.${c}Tensor`, `torch.cuda.sparse.${c}Tensor`]),
  ...Object.keys(STORAGE_DTYPES).flatMap((s) => [`torch.${s}`, ...(s.startsWith("Q") ? [] : [`torch.cuda.${s}`])]),
  "torch.storage.TypedStorage", "torch.storage.UntypedStorage",
  "torch.per_tensor_affine", "torch.per_tensor_symmetric", "torch.per_channel_affine", "torch.per_channel_symmetric",
  "torch.per_channel_affine_float_qparams",
  ...REBUILD_FUNCTIONS.map((f) => `torch._utils.${f}`),
  "torch._tensor._rebuild_from_type_v2",
]);

const BLOCKED_MODULES = new Set(["sys", "os", "posix", "nt"]);

/**
 * Why the global `full` (of `module`) may not be named, or undefined when it may.
 * @example globalAllowed("os", "os.system") // "is in the blocked module os"
 * @example globalAllowed("torch._utils", "torch._utils._rebuild_tensor_v2") // undefined
 */
export function globalAllowed(module: string, full: string): string | undefined {
  if (BLOCKED_MODULES.has(module)) return `is in the blocked module ${module}`;
  if (ALLOWED.has(full)) return undefined;
  return "is not one torch.load(weights_only=True) allows";
}

/** The number of allowed names, for the test that compares the list with torch's own. */
export function allowedGlobals(): readonly string[] {
  return [...ALLOWED].sort();
}
