// Typical usage of session-broker, for the same size measure as the peers: init, an AuthManager,
// login, the token and the user, a refresh, logout.
import init, { AuthManager } from "session-broker";

export async function run() {
  await init();
  const auth = new AuthManager({ baseUrl: location.origin });
  await auth.login({ username: "alice", password: "alice-pass" });
  const token = await auth.getToken();
  console.log(auth.getCurrentUser());
  await auth.refreshAuthentication();
  await auth.logout();
  return token;
}
