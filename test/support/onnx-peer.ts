/**
 * The reference reader as a peer: Debian's python3-onnx (onnx 1.12 on protobuf's C++ parser),
 * asked about serialized bytes in one python process per batch. For each input it says whether
 * protobuf parses it (`parse`) and whether onnx then accepts its contents (`check`): for a model,
 * onnx.checker.check_model and numpy_helper.to_array on every initializer (onnx 1.12's checker
 * does not compare a tensor's data with its dims; to_array does, when it reshapes); for a tensor,
 * numpy_helper.to_array.
 */
import { spawnSync } from "node:child_process";
import { onnxMissing, PYTHON } from "./python.js";

export { PYTHON };

export interface PeerVerdict {
  /** "ok" or the exception, e.g. "DecodeError: Error parsing message". */
  readonly parse: string;
  /** "ok", the exception, or "-" when parsing failed. */
  readonly check: string;
}

const SCRIPT = String.raw`
import sys, json, base64
import onnx
from onnx import numpy_helper
def why(e):
    return type(e).__name__ + ": " + str(e).splitlines()[0][:200] if str(e) else type(e).__name__
out = []
for kind, data in json.load(sys.stdin):
    data = base64.b64decode(data)
    try:
        m = onnx.load_model_from_string(data) if kind == "model" else onnx.load_tensor_from_string(data)
    except Exception as e:
        out.append({"parse": why(e), "check": "-"})
        continue
    try:
        if kind == "model":
            onnx.checker.check_model(m)
            for t in m.graph.initializer:
                numpy_helper.to_array(t)
        else:
            numpy_helper.to_array(m)
        out.append({"parse": "ok", "check": "ok"})
    except Exception as e:
        out.append({"parse": "ok", "check": why(e)})
print(json.dumps(out))
`;

/** Why the peer cannot run here (to skip a test with), or undefined when it can. */
export function peerMissing(): string | undefined {
  return onnxMissing();
}

/** The peer's verdict on each input, in order. */
export function askPeer(inputs: readonly (readonly ["model" | "tensor", Uint8Array])[]): PeerVerdict[] {
  const input = JSON.stringify(inputs.map(([kind, bytes]) => [kind, Buffer.from(bytes).toString("base64")]));
  const r = spawnSync(PYTHON, ["-c", SCRIPT], { input, encoding: "utf8", maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`the onnx peer failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as PeerVerdict[];
}
