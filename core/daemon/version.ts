/** The CLI's version; the listener writes it to ~/.svc/listener.version (spec 9). Kept in step with package.json by a unit test. */
export const VERSION = '0.1.0';
