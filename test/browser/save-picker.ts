/**
 * The playground's GGUF panels in a test page: showSaveFilePicker replaced by a writable that keeps
 * every chunk the page writes in globalThis.saved (the chunks, its suggested name, whether it was
 * closed or aborted), so a test reads back exactly what the page saved. Run with page.evaluate.
 */
/** The page as the picker uses it (the tests have no DOM types). */
type G = any;

/** In the page: showSaveFilePicker replaced by a writable that keeps every chunk the page writes. */
export function fakePicker(): void {
  const g = globalThis as G;
  g.saved = { chunks: [], closed: false, aborted: false, name: undefined };
  g.showSaveFilePicker = async (o: G) => {
    g.saved.name = o.suggestedName;
    return {
      createWritable: async () => ({
        write: async (d: G) => {
          if (g.saved.closed || g.saved.aborted) throw new Error("written after close or abort");
          g.saved.chunks.push(new Uint8Array(d).slice());
        },
        close: async () => { g.saved.closed = true; },
        abort: async () => { g.saved.aborted = true; },
      }),
    };
  };
}
