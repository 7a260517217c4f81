/**
 * The zip container torch.save writes (PyTorchStreamWriter over miniz): every entry stored
 * uncompressed, names under one top folder ("archive/data.pkl", "archive/data/0", ...), the data of
 * storages padded to 64-byte offsets by the local headers' extra fields, ZIP64 records once a file
 * or an offset passes 4 GiB. Only the central directory and the local headers are read here; an
 * entry's bytes are a range of the file the caller reads when it needs them.
 *
 * Refused as INVALID_DATA, naming the entry: a compressed or encrypted entry (torch never writes
 * one, and a reader that would inflate is one that can be made to inflate a bomb), an entry whose
 * bytes or local header lie outside the file or over the central directory, two entries of one
 * name, a local header that disagrees with the central one, and counts or sizes the file cannot
 * hold. Memory is bounded by the central directory, itself at most 1/46 of the file's size in
 * entries and capped below.
 */
import { TensorcastError } from "../../errors.js";
import { decodeUtf8 } from "../onnx/wire.js";

import type { ByteSource } from "../byte-source.js";
export type { ByteSource } from "../byte-source.js";

export interface ZipEntry {
  readonly name: string;
  /** Where its bytes start in the file, and how many. */
  readonly offset: number;
  readonly size: number;
  readonly crc32: number;
}

/** Entries a checkpoint's zip may list: far above any state dict's storages (one per tensor). */
export const MAX_ZIP_ENTRIES = 10_000_000;
/** A central directory larger than this is refused before it is read. */
const MAX_CENTRAL_DIRECTORY = 1 << 30;

const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_END = 0x06054b50;
const SIG_END64 = 0x06064b50;
const SIG_LOCATOR64 = 0x07064b50;

/** Whether the first bytes are a zip's (a local header; an empty zip starts with its end record). */
export function isZip(first: Uint8Array): boolean {
  if (first.length < 4) return false;
  const sig = (first[0] | (first[1] << 8) | (first[2] << 16) | (first[3] << 24)) >>> 0;
  return sig === SIG_LOCAL || sig === SIG_END;
}

function u64(view: DataView, at: number, what: string, file: string): number {
  const v = view.getBigUint64(at, true);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw bad(file, `${what} is ${v}, past 2^53`);
  return Number(v);
}

function bad(file: string, message: string): TensorcastError {
  return new TensorcastError("INVALID_DATA", `${file}: zip: ${message}`);
}

/**
 * Lists the entries of the zip in `src`, each with the range of its bytes (checked against the
 * file and the central directory).
 * @throws TensorcastError INVALID_DATA naming the file and the entry or record at fault.
 */
export async function readZipDirectory(src: ByteSource, file: string): Promise<ZipEntry[]> {
  // The end record is in the last 22 + 65535 (comment) bytes.
  const tailLength = Math.min(src.size, 22 + 0xffff);
  const tailStart = src.size - tailLength;
  const tail = await src.read(tailStart, tailLength);
  const tv = new DataView(tail.buffer, tail.byteOffset, tail.byteLength);
  let end = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (tv.getUint32(i, true) === SIG_END && i + 22 + tv.getUint16(i + 20, true) === tail.length) {
      end = i;
      break;
    }
  }
  if (end < 0) throw bad(file, "no end-of-central-directory record (not a zip, or truncated)");
  const endAt = tailStart + end;
  if (tv.getUint16(end + 4, true) !== 0 || tv.getUint16(end + 6, true) !== 0) throw bad(file, "a multi-disk zip");
  let count = tv.getUint16(end + 10, true);
  let cdSize = tv.getUint32(end + 12, true);
  let cdOffset = tv.getUint32(end + 16, true);
  let cdLimit = endAt;
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    if (endAt < 20) throw bad(file, "ZIP64 sizes are flagged but there is no ZIP64 locator");
    const loc = await src.read(endAt - 20, 20);
    const lv = new DataView(loc.buffer, loc.byteOffset, 20);
    if (lv.getUint32(0, true) !== SIG_LOCATOR64) throw bad(file, "ZIP64 sizes are flagged but there is no ZIP64 locator");
    const end64At = u64(lv, 8, "the ZIP64 end record's offset", file);
    if (end64At + 56 > endAt - 20) throw bad(file, `the ZIP64 end record at ${end64At} lies outside the file`);
    const e64 = await src.read(end64At, 56);
    const ev = new DataView(e64.buffer, e64.byteOffset, 56);
    if (ev.getUint32(0, true) !== SIG_END64) throw bad(file, `no ZIP64 end record at ${end64At}`);
    count = u64(ev, 32, "the entry count", file);
    cdSize = u64(ev, 40, "the central directory's size", file);
    cdOffset = u64(ev, 48, "the central directory's offset", file);
    cdLimit = end64At;
  }
  if (count > MAX_ZIP_ENTRIES) throw bad(file, `${count} entries, more than the ${MAX_ZIP_ENTRIES} read`);
  if (cdSize > MAX_CENTRAL_DIRECTORY) throw bad(file, `a central directory of ${cdSize} bytes, more than the ${MAX_CENTRAL_DIRECTORY} read`);
  if (cdOffset + cdSize > cdLimit) throw bad(file, `the central directory [${cdOffset}, ${cdOffset + cdSize}) runs past its end record at ${cdLimit}`);
  if (count * 46 > cdSize) throw bad(file, `${count} entries cannot fit a central directory of ${cdSize} bytes`);
  const cd = await src.read(cdOffset, cdSize);
  const cv = new DataView(cd.buffer, cd.byteOffset, cd.byteLength);
  const entries: ZipEntry[] = [];
  const names = new Set<string>();
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + 46 > cd.length || cv.getUint32(p, true) !== SIG_CENTRAL) throw bad(file, `central directory entry ${i} at byte ${cdOffset + p} is not a central header`);
    const flags = cv.getUint16(p + 8, true);
    const method = cv.getUint16(p + 10, true);
    const crc32 = cv.getUint32(p + 16, true);
    let compressed = cv.getUint32(p + 20, true);
    let size = cv.getUint32(p + 24, true);
    const nameLength = cv.getUint16(p + 28, true);
    const extraLength = cv.getUint16(p + 30, true);
    const commentLength = cv.getUint16(p + 32, true);
    let local = cv.getUint32(p + 42, true);
    const next = p + 46 + nameLength + extraLength + commentLength;
    if (next > cd.length) throw bad(file, `central directory entry ${i} runs past the central directory`);
    const name = decodeUtf8(cd.subarray(p + 46, p + 46 + nameLength), `${file}: zip: central directory entry ${i}'s name`);
    const label = `entry ${JSON.stringify(name.slice(0, 200))}`;
    // ZIP64 extra field: the 8-byte values for the 32-bit fields that are all ones, in this order.
    if (size === 0xffffffff || compressed === 0xffffffff || local === 0xffffffff) {
      let q = p + 46 + nameLength;
      const extraEnd = q + extraLength;
      let found = false;
      while (q + 4 <= extraEnd) {
        const id = cv.getUint16(q, true);
        const len = cv.getUint16(q + 2, true);
        if (q + 4 + len > extraEnd) break;
        if (id === 1) {
          let r = q + 4;
          const take = (): number => {
            if (r + 8 > q + 4 + len) throw bad(file, `${label}: its ZIP64 extra field is too short`);
            const v = u64(cv, r, `${label}'s ZIP64 value`, file);
            r += 8;
            return v;
          };
          if (size === 0xffffffff) size = take();
          if (compressed === 0xffffffff) compressed = take();
          if (local === 0xffffffff) local = take();
          found = true;
          break;
        }
        q += 4 + len;
      }
      if (!found) throw bad(file, `${label}: its sizes are flagged as ZIP64 but it has no ZIP64 extra field`);
    }
    if (flags & 1) throw bad(file, `${label} is encrypted`);
    if (method !== 0) throw bad(file, `${label} is compressed (method ${method}); torch.save stores every entry uncompressed, and only stored entries are read`);
    if (compressed !== size) throw bad(file, `${label} is stored but its compressed size ${compressed} differs from its size ${size}`);
    if (names.has(name)) throw bad(file, `${label} appears twice`);
    names.add(name);
    entries.push({ name, offset: local, size, crc32 });
    p = next;
  }
  // Local headers: where each entry's bytes really start.
  const located: ZipEntry[] = [];
  for (const e of entries) {
    const label = `entry ${JSON.stringify(e.name.slice(0, 200))}`;
    if (e.offset + 30 > cdOffset) throw bad(file, `${label}'s local header at ${e.offset} lies outside the entries' part of the file`);
    const h = await src.read(e.offset, 30);
    const hv = new DataView(h.buffer, h.byteOffset, 30);
    if (hv.getUint32(0, true) !== SIG_LOCAL) throw bad(file, `${label} has no local header at ${e.offset}`);
    if (hv.getUint16(8, true) !== 0) throw bad(file, `${label}'s local header says it is compressed`);
    const nameLength = hv.getUint16(26, true);
    const extraLength = hv.getUint16(28, true);
    const start = e.offset + 30 + nameLength + extraLength;
    if (start + e.size > cdOffset) {
      throw bad(file, `${label}'s bytes [${start}, ${start + e.size}) run past the entries' part of the file (which ends at ${cdOffset})`);
    }
    const localName = await src.read(e.offset + 30, nameLength);
    if (decodeUtf8(localName, `${file}: zip: ${label}'s local name`) !== e.name) throw bad(file, `${label}'s local header names another entry`);
    located.push({ name: e.name, offset: start, size: e.size, crc32: e.crc32 });
  }
  return located;
}

let crcTable: Uint32Array | undefined;

/** The CRC-32 (zip's, polynomial 0xEDB88320) of `bytes`. */
export function crc32(bytes: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = crcTable[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
