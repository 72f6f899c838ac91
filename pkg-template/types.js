// The types-only entry (`session-broker/types`): for server-side rendering and type imports in
// code that runs in Node, where nothing of the SDK may load. Its types are the package's.
export {};
