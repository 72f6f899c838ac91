// The two SDKs behind one face, for the bench pages: session-broker's release package (/pkg/) and
// @supabase/auth-js (bundled by bench/peers.sh, talking to the bench's fake of its token
// endpoint, which lets a refresh token be spent once: a strict server).
export const KEYS = { ours: "serviceProxyToken-Auth", supabase: "sb-bench-auth-token", "supabase+lock": "sb-bench-auth-token" };

/** Counts this window's refresh requests (both SDKs call the page's fetch when they send). */
export function countRefreshes() {
  const counter = { n: 0 };
  const fetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    const url = String(input?.url ?? input);
    if (url.includes("/auth/refresh") || url.includes("grant_type=refresh_token")) counter.n++;
    return fetch(input, init);
  };
  return counter;
}

export async function open(sdk) {
  if (sdk === "ours") {
    const { default: init, AuthManager } = await import("/pkg/session_broker.js");
    await init();
    const auth = new AuthManager({ baseUrl: location.origin });
    return {
      async login() {
        const r = await auth.login({ username: "alice", password: "alice-pass" });
        if (!r.success) throw new Error(`login: ${r.error}`);
      },
      token: () => auth.getToken(),
      checks: {
        checkIfLoggedIn: () => auth.checkIfLoggedIn(),
        isTokenExpired: () => auth.isTokenExpired(),
        isAboutToExpire: () => auth.isAboutToExpire(),
        getCurrentRoles: () => auth.getCurrentRoles(),
        getCurrentUser: () => auth.getCurrentUser(),
      },
      hasPermission: () => auth.hasPermission("crons:run"),
      expire: () => auth.saveToken("Auth", localStorage.getItem(KEYS.ours), 0),
      loggedIn: async () => auth.checkIfLoggedIn(),
    };
  }
  const { GoTrueClient, navigatorLock } = await import("./supabase.js");
  const auth = new GoTrueClient({
    url: `${location.origin}/supabase/auth/v1`, storageKey: "sb-bench-auth-token", storage: localStorage,
    autoRefreshToken: false, persistSession: true, detectSessionInUrl: false,
    ...(sdk === "supabase+lock" ? { lock: navigatorLock } : {}),
  });
  await auth.initialize();
  return {
    async login() {
      const { error } = await auth.signInWithPassword({ email: "alice@example.com", password: "alice-pass" });
      if (error) throw error;
    },
    token: async () => (await auth.getSession()).data.session?.access_token ?? null,
    checks: {},
    expire() {
      const session = JSON.parse(localStorage.getItem(KEYS.supabase));
      session.expires_at = Math.floor(Date.now() / 1000) - 10;
      localStorage.setItem(KEYS.supabase, JSON.stringify(session));
    },
    loggedIn: async () => (await auth.getSession()).data.session !== null,
  };
}

let sink = 0;
/** Calls per second of `fn` over about `ms` milliseconds (after a warm-up). */
export async function rate(fn, awaited, ms = 500) {
  for (let i = 0; i < 2000; i++) sink ^= awaited ? ((await fn()) ? 1 : 0) : (fn() ? 1 : 0);
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    if (awaited) for (let i = 0; i < 500; i++) sink ^= (await fn()) ? 1 : 0;
    else for (let i = 0; i < 500; i++) sink ^= fn() ? 1 : 0;
    n += 500;
    t = performance.now();
  }
  return Math.round((n * 1000) / (t - t0));
}
