"""The fuzz suite's Python peers, run once per batch by test/fuzz/fuzz.test.ts with Debian's
/usr/bin/python3 (python3-numpy, python3-onnx 1.12 on protobuf's C++ parser).

stdin: a JSON list of [kind, path], kind "npy", "model" or "tensor". stdout: a JSON list of
verdicts, one per input, in order.

npy: numpy.load(allow_pickle=False). NumPy alone does not know the ml_dtypes names tensorcast
writes as descr ('bfloat16', 'float8_e4m3fn', ...); such a descr is replaced in the header by a
NumPy type of the same width, padded to the same length, so NumPy still parses the header and
checks the data's length, and the verdict says which ml_dtypes name it stood for.

model / tensor: parsed by protobuf (ModelProto / TensorProto.ParseFromString). Each tensor's
data is then laid out as ONNX raw_data from the onnx.proto rules (raw_data, or the typed field its
data_type uses, with the element count that dims give), by this script alone; onnx.checker's
verdicts (check_model, check_tensor for the types onnx 1.12 knows) are reported beside it.
"""
import base64, hashlib, io, json, re, struct, sys

import numpy as np
import onnx
from onnx import TensorProto, ModelProto, checker

# ONNX data_type -> (bits per element, typed field). Sub-byte types keep one packed byte per
# int32_data entry; bool is any non-zero entry; 16-bit floats are their bit patterns.
TYPES = {
    1: (32, "float_data"), 2: (8, "int32_data"), 3: (8, "int32_data"), 4: (16, "int32_data"),
    5: (16, "int32_data"), 6: (32, "int32_data"), 7: (64, "int64_data"), 8: (0, "string_data"),
    9: (8, "int32_data"), 10: (16, "int32_data"), 11: (64, "double_data"), 12: (32, "uint64_data"),
    13: (64, "uint64_data"), 14: (64, "float_data"), 15: (128, "double_data"), 16: (16, "int32_data"),
    17: (8, "int32_data"), 18: (8, "int32_data"), 19: (8, "int32_data"), 20: (8, "int32_data"),
    21: (4, "int32_data"), 22: (4, "int32_data"), 23: (4, "int32_data"), 24: (8, "int32_data"),
    25: (2, "int32_data"), 26: (2, "int32_data"), 27: (6, "int32_data"), 28: (6, "int32_data"),
}
TYPED = ["float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data"]
ML_DTYPES = {
    "bfloat16": "<u2", "float8_e4m3fn": "|u1", "float8_e4m3fnuz": "|u1", "float8_e5m2": "|u1", "float8_e5m2fnuz": "|u1",
    "float8_e8m0fnu": "|u1", "float4_e2m1fn": "|u1", "float6_e2m3fn": "|u1", "float6_e3m2fn": "|u1",
    "int4": "|u1", "uint4": "|u1", "int2": "|u1", "uint2": "|u1",
}


def why(e):
    text = str(e).splitlines()[0][:200] if str(e) else ""
    return type(e).__name__ + (": " + text if text else "")


def digest(b):
    return b.hex() if len(b) <= 4096 else "sha:" + hashlib.sha256(b).hexdigest()


def npy(path):
    data = open(path, "rb").read()
    ml = None
    for name, sub in ML_DTYPES.items():
        quoted = ("'%s'" % name).encode()
        if data[:10].startswith(b"\x93NUMPY") and data.count(quoted, 0, 4096) == 1:
            at = data.index(quoted)
            replacement = ("'%s'" % sub).encode().ljust(len(quoted))
            data = data[:at] + replacement + data[at + len(quoted):]
            ml = name
            break
    try:
        a = np.load(io.BytesIO(data), allow_pickle=False, max_header_size=1 << 20)
    except Exception as e:
        return {"ok": False, "why": why(e)}
    if not isinstance(a, np.ndarray):
        return {"ok": False, "why": "not an array"}
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    raw = a.tobytes(order="A")
    return {"ok": True, "descr": a.dtype.str, "ml": ml, "shape": list(a.shape), "fortran": bool(a.flags.f_contiguous and not a.flags.c_contiguous and a.ndim > 1), "data": digest(raw)}


def raw_layout(t):
    """The tensor's elements in the raw_data layout, from its fields alone."""
    if t.data_location == TensorProto.EXTERNAL:
        raise ValueError("external data (not followed)")
    if t.HasField("segment"):
        raise ValueError("segment")
    if t.data_type not in TYPES:
        raise ValueError("unknown data_type %d" % t.data_type)
    bits, field = TYPES[t.data_type]
    n = 1
    for d in t.dims:
        if d < 0:
            raise ValueError("negative dimension")
        n *= d
    present = [f for f in TYPED if len(getattr(t, f)) > 0]
    if t.HasField("raw_data"):
        if t.data_type == 8:
            raise ValueError("STRING in raw_data")
        if present:
            raise ValueError("raw_data and " + ",".join(present))
        if len(t.raw_data) * 8 != (n * bits + 7) // 8 * 8:
            raise ValueError("raw_data has %d bytes for %d elements" % (len(t.raw_data), n))
        return {"data": digest(t.raw_data), "floaty": False}
    if any(f != field for f in present):
        raise ValueError("typed field %s for data_type %d" % (",".join(present), t.data_type))
    values = list(getattr(t, field))
    if t.data_type == 8:
        if len(values) != n:
            raise ValueError("%d strings for %d elements" % (len(values), n))
        return {"strings": [v.decode("utf-8") for v in values]}
    entries = (n * bits + 7) // 8 if bits < 8 else n * (2 if t.data_type in (14, 15) else 1)
    if len(values) != entries:
        raise ValueError("%s has %d entries, %d needed" % (field, len(values), entries))
    if field == "float_data":
        b = struct.pack("<%df" % len(values), *values)
    elif field == "double_data":
        b = struct.pack("<%dd" % len(values), *values)
    elif field == "int64_data":
        b = struct.pack("<%dq" % len(values), *values)
    elif field == "uint64_data":
        b = struct.pack("<%dI" % len(values), *[v & 0xFFFFFFFF for v in values]) if t.data_type == 12 else struct.pack("<%dQ" % len(values), *values)
    elif t.data_type == 9:
        b = bytes(1 if v != 0 else 0 for v in values)
    elif bits <= 8:
        b = bytes(v & 0xFF for v in values)
    elif bits == 16:
        b = struct.pack("<%dH" % len(values), *[v & 0xFFFF for v in values])
    else:
        b = struct.pack("<%dI" % len(values), *[v & 0xFFFFFFFF for v in values])
    return {"data": digest(b), "floaty": field == "float_data"}


def tensor_verdict(t):
    v = {"name": t.name, "data_type": t.data_type, "dims": list(t.dims)}
    try:
        v.update(raw_layout(t))
    except Exception as e:
        v["layout"] = why(e)
    if t.data_type <= 16 and t.data_location != TensorProto.EXTERNAL:
        try:
            checker.check_tensor(t)
        except Exception as e:
            v["checker"] = why(e)
    return v


def proto(kind, path):
    data = open(path, "rb").read()
    try:
        m = ModelProto() if kind == "model" else TensorProto()
        m.ParseFromString(data)
    except Exception as e:
        return {"ok": False, "why": why(e)}
    if kind == "tensor":
        return {"ok": True, "tensors": [tensor_verdict(m)]}
    out = {"ok": True, "has_graph": m.HasField("graph"), "tensors": [tensor_verdict(t) for t in m.graph.initializer]}
    try:
        checker.check_model(m)
    except Exception as e:
        out["checker"] = why(e)
    return out


def main():
    out = []
    for kind, path in json.load(sys.stdin):
        try:
            out.append(npy(path) if kind == "npy" else proto(kind, path))
        except RecursionError as e:
            out.append({"ok": False, "why": why(e)})
    json.dump(out, sys.stdout)


main()
