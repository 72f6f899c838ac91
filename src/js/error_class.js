// session-broker's error class: every error the SDK throws or rejects with is one. A snippet of
// the crate (not wasm-bindgen's generated glue) so it can be a real `Error` subclass: `instanceof`,
// `name`, `message`, `code` and `cause` work as JS developers expect. The package's entry module
// (pkg-template/session_broker.js) re-exports it.

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
