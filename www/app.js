// The demo page: plain ES modules over the built package, no bundler, no Node.
import init, { AuthManager, RollingDbAdmin, SyncSession } from "/pkg/session_broker.js";
import { $ } from "./dom.js";
import { createConsole } from "./console/index.js";
import { createSessionPane } from "./session.js";
import { createReplicaPane } from "./replica.js";

await init({ module_or_path: window.sessionBrokerWasm ?? new URL("/pkg/session_broker_bg.wasm", location.href) });
const auth = new AuthManager({ baseUrl: location.origin, deviceInfo: { name: `demo tab on ${location.host}` } });
const sync = new SyncSession(auth);
const admin = new RollingDbAdmin(auth);
Object.assign(window, { sessionBroker: { auth, sync, admin } }); // handy in the console

const console_ = createConsole(auth, admin);
const session = createSessionPane(auth, sync, () => console_.refresh());
createReplicaPane(auth, sync, session.log);

// The other origin of the same server: a second device with its own storage.
const other = new URL(location.href);
other.hostname = location.hostname === "localhost" ? "127.0.0.1" : "localhost";
$("other-origin").href = other.href;
$("other-origin").textContent = other.origin;

session.render();
console_.refresh();
if (auth.checkIfLoggedIn()) session.connect();
setInterval(session.renderToken, 1000);
// The console polls on its own schedule (www/poller.js): one round at a time, slower while nothing changes.
