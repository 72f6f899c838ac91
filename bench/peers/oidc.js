// Typical usage of oidc-client-ts: a UserManager keeping the user in localStorage, a redirect
// login, the stored user and its token, a silent renew, sign-out.
import { UserManager, WebStorageStateStore } from "oidc-client-ts";

const manager = new UserManager({
  authority: "https://example.invalid", client_id: "bench", redirect_uri: location.origin,
  userStore: new WebStorageStateStore({ store: localStorage }), automaticSilentRenew: true,
});
export async function run() {
  if (location.search.includes("code=")) await manager.signinRedirectCallback();
  const user = await manager.getUser();
  if (!user) return manager.signinRedirect();
  await manager.signinSilent();
  await manager.signoutRedirect();
  return user.access_token;
}
