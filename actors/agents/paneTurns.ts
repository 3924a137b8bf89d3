/**
 * One typing at a time per pane. A session actor that fails while its typing runs is stopped, but the promise it
 * invoked runs on (xstate stops an actor that failed without stopping what it invoked); the actor rebuilt for that
 * session must not type into the same pane meanwhile. Each typing waits for the one before it on its pane.
 */
export function createPaneTurns(): <T>(pane: string, run: () => Promise<T>) => Promise<T> {
  const last = new Map<string, Promise<unknown>>();
  return (pane, run) => {
    const mine = (last.get(pane) ?? Promise.resolve()).then(run, run);
    const settled = mine.catch(() => {});
    last.set(pane, settled);
    void settled.then(() => {
      if (last.get(pane) === settled) last.delete(pane);
    });
    return mine;
  };
}
