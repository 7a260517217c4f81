/**
 * Command-line values shared by convert, inspect and diff: formats, regular expressions, .npy
 * reading options, job counts and sizes, each refused with a UsageError that says what is accepted.
 */
import { dtype, TensorcastError } from "../../index.js";
import { UsageError } from "../cli/usage.js";
import type { NpyOptions } from "../io/npy.js";
import { FILE_FORMATS, type FileFormat } from "../io/tensors.js";
import { parseSize } from "./schedule.js";

export function formatOption(value: string | undefined, option: string, command: string): FileFormat | undefined {
  if (value === undefined) return undefined;
  const v = value.toLowerCase().replace(/^\./, "");
  if ((FILE_FORMATS as readonly string[]).includes(v)) return v as FileFormat;
  throw new UsageError(`${option} ${JSON.stringify(value)} is not a format; the formats are ${FILE_FORMATS.join(", ")}`, command);
}

export function regexOption(value: string | undefined, option: string, command: string): RegExp | undefined {
  if (value === undefined) return undefined;
  try {
    return new RegExp(value);
  } catch (e) {
    throw new UsageError(`${option} ${JSON.stringify(value)} is not a regular expression: ${(e as Error).message}`, command);
  }
}

export function npyOptions(npyDtype: string | undefined, fortran: string | undefined, command: string): NpyOptions {
  const opts: NpyOptions = {};
  if (npyDtype !== undefined) {
    try {
      opts.assume = dtype(npyDtype);
    } catch (e) {
      if (e instanceof TensorcastError) throw new UsageError(`--npy-dtype: ${e.message}`, command);
      throw e;
    }
  }
  if (fortran !== undefined) {
    if (fortran !== "transpose" && fortran !== "refuse") {
      throw new UsageError(`--fortran ${JSON.stringify(fortran)} is neither transpose nor refuse`, command);
    }
    opts.fortran = fortran;
  }
  return opts;
}

export function jobsOption(value: string | undefined, command: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 64) throw new UsageError(`--jobs ${JSON.stringify(value)} is not a number of threads from 0 to 64`, command);
  return n;
}

export function sizeOption(value: string | undefined, command: string): number | undefined {
  if (value === undefined) return undefined;
  const n = parseSize(value);
  if (n === undefined || n < 64) throw new UsageError(`--chunk-size ${JSON.stringify(value)} is not a size such as 64MiB, 512KiB or 1048576`, command);
  return n;
}

/** A compact spelling of a statistic: "-" for none, integers exactly, others to 4 significant digits. */
export function formatStat(x: number | null | undefined): string {
  if (x === null || x === undefined) return "-";
  if (x !== x) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (Number.isInteger(x) && Math.abs(x) < 1e7) return String(x);
  const s = String(Number(x.toPrecision(4)));
  return s;
}
