// Typical usage of @auth0/auth0-spa-js: a client with refresh tokens in localStorage, a redirect
// login, the token and the user, logout.
import { createAuth0Client } from "@auth0/auth0-spa-js";

export async function run() {
  const auth0 = await createAuth0Client({
    domain: "example.auth0.com", clientId: "bench", cacheLocation: "localstorage", useRefreshTokens: true,
    authorizationParams: { redirect_uri: location.origin },
  });
  if (location.search.includes("code=")) await auth0.handleRedirectCallback();
  if (!(await auth0.isAuthenticated())) return auth0.loginWithRedirect();
  const token = await auth0.getTokenSilently();
  console.log(await auth0.getUser());
  await auth0.logout();
  return token;
}
