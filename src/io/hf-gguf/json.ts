/** The JSON files of a Hugging Face folder, as JSON.parse gives them. */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export function isObject(v: Json | undefined): v is { [k: string]: Json } {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
