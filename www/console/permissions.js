// What the signed-in operator may do, answered by the package's own `hasPermission` (the same
// map the server authorises its routes by), asked once per refresh round.

/** The actions the console's controls depend on. */
const ACTIONS = {
  read: "rollingDb:read",
  flags: "rollingDb:flags",
  force: "rollingDb:force",
  cronsRun: "crons:run",
  invalidate: "clients:invalidate",
  rewarm: "rollingDb:rewarm",
  release: "rollingDb:release",
  losses: "rollingDb:losses",
};

/** `{read, flags, force, cronsRun, invalidate, rewarm, release, losses}`, each a boolean for the current session. */
export async function permissions(auth) {
  const names = Object.keys(ACTIONS);
  const answers = await Promise.all(names.map((n) => auth.hasPermission(ACTIONS[n])));
  const may = Object.fromEntries(names.map((n, i) => [n, answers[i]]));
  // The console opens for anyone who may act on the rollout or read it.
  may.operate = may.read || may.flags || may.cronsRun || may.invalidate;
  return may;
}

/** Before the first round, and without a session: nothing allowed. */
export const NOTHING = Object.freeze(Object.fromEntries([...Object.keys(ACTIONS), "operate"].map((n) => [n, false])));
