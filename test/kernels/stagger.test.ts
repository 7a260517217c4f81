import assert from "node:assert/strict";
import { test } from "node:test";
import { STAGGER_SLACK, staggered } from "../../src/kernels/wasm/stagger.js";

// The streamed kernels copy each chunk between their memory and the caller's array; glibc's memmove
// on this machine runs those copies about ten times slower when both ends share an offset within a
// 4 KiB page. These pin the placement rule the copies rely on.
test("staggered: every offset is half a page from the array's offset, inside the slack, same alignment", () => {
  for (const base of [0, 4096, 12288, 135168]) {
    for (let off = 0; off < 3 * 4096; off += 4) {
      const at = staggered(base, off);
      assert.ok(at >= base && at < base + STAGGER_SLACK, `staggered(${base}, ${off}) = ${at}`);
      assert.equal(((off - at) % 4096 + 4096) % 4096, 2048, `distance of ${at} from ${off}`);
      assert.equal(at % 16, off % 16, "keeps the array's alignment");
    }
  }
});
