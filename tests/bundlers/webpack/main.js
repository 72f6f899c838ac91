// webpack 5 turns `new URL("session_broker_bg.wasm", import.meta.url)` into an emitted asset.
import { run } from "./app.js";
run();
