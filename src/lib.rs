//! session-broker: a browser session SDK compiled to WebAssembly.
//!
//! `core` decides (platform-free, tested natively); `web` adapts the browser; `js` is the
//! `#[wasm_bindgen]` facade that only converts. `protocol` holds the wire types the mock server
//! shares.

#![warn(missing_docs)]

// The wire, shared with the mock server: the `session-broker-protocol` crate's own sources,
// compiled here as a module rather than linked as a crate. In the wasm build a second crate
// instantiates its generics (string searches, maps, vectors) apart from the SDK's and costs the
// package about 400 B gzipped; one crate keeps them shared. Its files name each other with
// `super::` only, so they read the same either way.
// Before `core`, whose own codes are declared by the protocol's `codes!` (textual scope).
#[macro_use]
#[path = "../protocol/src/lib.rs"]
pub mod protocol;
pub mod core;

#[cfg(target_arch = "wasm32")]
mod web;

#[cfg(target_arch = "wasm32")]
pub mod js;

/// Panics become readable `console.error` messages instead of an opaque `unreachable`, in
/// debug builds: a panic is a defect, and the hook's formatting would weigh in every release.
#[cfg(all(target_arch = "wasm32", debug_assertions))]
#[wasm_bindgen::prelude::wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

// A free list instead of std's dlmalloc: 3.5 KB less of the package (docs/performance.md, "The package's size"). Sound
// here because the module is single-threaded (no wasm threads).
#[cfg(target_arch = "wasm32")]
#[global_allocator]
static ALLOC: lol_alloc::AssumeSingleThreaded<lol_alloc::FreeListAllocator> =
    unsafe { lol_alloc::AssumeSingleThreaded::new(lol_alloc::FreeListAllocator::new()) };
