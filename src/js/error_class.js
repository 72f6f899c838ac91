// session-broker's error class: every error the SDK throws or rejects with is one. A snippet of
// the crate (not wasm-bindgen's generated glue) so it can be a real `Error` subclass: `instanceof`,
// `name`, `message`, `code` and `cause` work as JS developers expect. `make build` re-exports it
// from the package entry.

export class SessionBrokerError extends Error {
  constructor(code, message, cause) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "SessionBrokerError";
    this.code = code;
  }
}

/** Whether `value` is a SessionBrokerError (a type guard in the .d.ts). */
export function isSessionBrokerError(value) {
  return value instanceof SessionBrokerError;
}

/** The module's exports once `init()` has run; before, a SessionBrokerError saying so (the
 *  package's constructors go through here: wasm-bindgen's own message would be "Cannot read
 *  properties of undefined"). */
export function sbReady(wasm) {
  if (wasm === undefined) {
    throw new SessionBrokerError("not_initialized",
      "session-broker is not initialised yet: call `await init()` (the package's default export) once before creating an AuthManager, SyncSession or RollingDbAdmin.");
  }
  return wasm;
}
