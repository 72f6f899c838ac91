// The operator routes `RollingDbAdmin` does not wrap (re-warm, releasing a held day, and what a
// rollback leaves in CORE: left out of the package to keep it within its size budget), called the
// way any app may: with the session's token, answered in the package's `CallResult` shape.

/** An answer in the `CallResult` shape: `{success: true, data}` or `{success: false, status, code, error, checks}`. */
async function answered(res) {
  const answer = await res.json().catch(() => ({}));
  return res.ok
    ? { success: true, data: answer }
    : { success: false, status: res.status, code: answer.error, error: answer.message, checks: answer.checks };
}

/** `GET /admin/rolling-db/{path}`, answered as `adminPost` answers. */
export async function adminGet(auth, path) {
  const headers = { Authorization: `Bearer ${await auth.getToken()}` };
  return answered(await fetch(`/admin/rolling-db/${path}`, { headers }));
}

/** `POST /admin/rolling-db/{path}`, answered in the `CallResult` shape. */
export async function adminPost(auth, path, body) {
  const headers = { Authorization: `Bearer ${await auth.getToken()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`/admin/rolling-db/${path}`, {
    method: "POST",
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return answered(res);
}
