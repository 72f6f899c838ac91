// Typical usage of @supabase/auth-js: a client that keeps its session in localStorage, signs in,
// reads the session and its token, refreshes, signs out.
import { GoTrueClient } from "@supabase/auth-js";

const auth = new GoTrueClient({ url: `${location.origin}/auth/v1`, storage: localStorage, autoRefreshToken: true });
export async function run() {
  await auth.signInWithPassword({ email: "alice@example.com", password: "alice-pass" });
  const { data } = await auth.getSession();
  auth.onAuthStateChange((event) => console.log(event));
  await auth.refreshSession();
  await auth.signOut();
  return data.session?.access_token;
}
