// The embedded store's synchronous calls behind an asynchronous interface (the CLI's AdminStore, the
// console's ConsoleStore): runs at once, and a throw becomes a rejection, as a remote store's would.
export function syncCall<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}
