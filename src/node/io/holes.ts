/**
 * Finding the data in a piece of a file, so that a copy writes only that and leaves holes where
 * the source has runs of zeros. Node exposes neither SEEK_DATA / SEEK_HOLE nor a copy that keeps
 * holes (fs.copyFile falls back to writing every byte), so a sparse file of 5 GiB with a few
 * bytes in it became 5.1 GiB on disk; a copy through `dataRuns` keeps it a few blocks.
 */

/** Zeros this long are left as a hole: 16 blocks of 4 KiB, so a hole is worth its missing write. */
export const HOLE_BLOCK = 64 * 1024;

const ZEROS = new Uint8Array(HOLE_BLOCK);

/**
 * The ranges [start, end) of `bytes` to write, in order, leaving out every block of `block` bytes
 * (counted from the start of `bytes`; the last one may be shorter) that is all zeros. Neighbouring
 * blocks with data form one range.
 * @example dataRuns(new Uint8Array(3 * 65536).fill(1, 65536, 65537)) // [[65536, 131072]]
 */
export function dataRuns(bytes: Uint8Array, block = HOLE_BLOCK): [number, number][] {
  const zeros = block <= ZEROS.length ? ZEROS : new Uint8Array(block);
  const runs: [number, number][] = [];
  for (let at = 0; at < bytes.length; at += block) {
    const end = Math.min(at + block, bytes.length);
    // Buffer.equals compares with memcmp: a 4 MiB chunk in well under a millisecond.
    if (Buffer.from(bytes.buffer, bytes.byteOffset + at, end - at).equals(zeros.subarray(0, end - at))) continue;
    const last = runs[runs.length - 1];
    if (last && last[1] === at) last[1] = end;
    else runs.push([at, end]);
  }
  return runs;
}
