/** The JSON file reader lives in the core (src/io/json-file.ts): a page reads a folder's index with it too. */
export { firstTooDeep, parseJsonFile } from "../../io/json-file.js";
