/**
 * Lines `convert` adds to its summary where a conversion's result may surprise.
 *
 * A whole-graph conversion's summary says when the graph barely shrank: at opset
 * 17 a CNN's Conv and pooling have no bfloat16 (it comes at opset 22), so its weights stay float32
 * and a 46.7 MB resnet18 becomes 45.7 MB. Raising the opset would not help here: the operator table
 * (onnx 1.12) stops at opset 17, so a later model's Conv is still kept in float32.
 */
import type { ConfigReport } from "../convert/checkpoint-config.js";
import type { ModelConvertReport } from "../convert/model-precision.js";
import { formatBytes } from "../io/tensors.js";

/**
 * A line saying that most weight bytes stayed float32 and what stores them in the new type, or ""
 * when most were converted (or only the weights were converted anyway).
 * @example keptWeightsNote(report) // "most weight bytes stay float32: 9.13 KiB of 9.77 KiB, read by nodes kept in float32, ..."
 */
export function keptWeightsNote(r: ModelConvertReport): string {
  const { target, other } = r.floatWeightBytes;
  if (r.mode !== "graph" || other <= target) return "";
  const instead = [`--weights-only stores every weight as ${r.to} (cast back to float32 where read)`];
  if (r.to === "bfloat16") instead.push("--to float16 converts more operators (Conv and pooling have float16 from opset 1 and bfloat16 only from opset 22)");
  return `most weight bytes stay float32: ${formatBytes(other)} of ${formatBytes(target + other)}, read by nodes kept in float32, so the model barely shrinks; ${instead.join(", or ")}\n`;
}

/**
 * What a converted folder's config.json now says, or why it says what it said, or "" when it had
 * no data-type key naming another type.
 * @example configNote(report.config, "bfloat16") // "config.json: torch_dtype float32 -> bfloat16\n"
 */
export function configNote(c: ConfigReport | undefined, to: string): string {
  if (!c) return "";
  const keys = c.keys.map((k) => `${k.key} ${k.was}`).join(", ");
  if (c.updated) return `${c.file}: ${c.keys.map((k) => `${k.key} ${k.was} -> ${to}`).join(", ")}\n`;
  return `${c.file} copied as it is${keys ? ` (${keys})` : ""}: ${c.reason}\n`;
}
