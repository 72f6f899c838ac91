// The package's declarations: the API written by hand (api.d.ts), the types the Rust types
// generate (protocol.d.ts, written by `make types`), and the classes and init() wasm-bindgen
// declares from the Rust doc comments (bindings.d.ts).
export * from "./api.js";
// api.d.ts's AuthManager (generic in the app's claims and actions), not the generated one it extends.
export { AuthManager } from "./api.js";
export * from "./protocol.js";
export * from "./bindings.js";
export { default } from "./bindings.js";
