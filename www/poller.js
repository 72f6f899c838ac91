// The console's refresh schedule. One round of requests at a time: a call while one is in flight
// asks for one more round after it instead of stacking (a slow server never piles refreshes up).
// While nothing changes the pause doubles up to `max`; a change, or the operator's own action,
// brings it back to `every`. A hidden tab asks nothing and refreshes at once when shown again.

export function createPoller(round, { every = 4000, max = 32000 } = {}) {
  let pause = every;
  let timer = null;
  let flight = null;
  let again = false;

  function later() {
    clearTimeout(timer);
    timer = document.hidden ? null : setTimeout(run, pause);
  }

  function run() {
    if (flight) {
      again = true;
      return flight;
    }
    clearTimeout(timer);
    flight = (async () => {
      do {
        again = false;
        let changed = true;
        try {
          changed = await round();
        } catch (e) {
          console.error("console refresh:", e);
        }
        pause = changed ? every : Math.min(max, pause * 2);
      } while (again);
      flight = null;
      later();
    })();
    return flight;
  }

  /** Refreshes now (or right after the round in flight), and polls at the quickest pace again. */
  function now() {
    pause = every;
    return run();
  }

  document.addEventListener("visibilitychange", () => (document.hidden ? clearTimeout(timer) : now()));
  return { now, pause: () => pause };
}
