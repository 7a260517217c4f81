/** How tensor bytes travel between the fuzz processes: hex when small (so NaNs can be compared by value), else a SHA-256. */
import { createHash } from "node:crypto";

export function digest(bytes: Uint8Array): string {
  return bytes.length <= 4096 ? Buffer.from(bytes).toString("hex") : `sha:${createHash("sha256").update(bytes).digest("hex")}`;
}
