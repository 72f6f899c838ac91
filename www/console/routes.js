// The two operator routes `RollingDbAdmin` does not wrap (re-warm and releasing a held day: left
// out of the package to keep it within its size budget), called the way any app may: with the
// session's token, answered in the package's `CallResult` shape.

/** `POST /admin/rolling-db/{path}`: `{success: true, data}` or `{success: false, status, code, error, checks}`. */
export async function adminPost(auth, path, body) {
  const headers = { Authorization: `Bearer ${await auth.getToken()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`/admin/rolling-db/${path}`, {
    method: "POST",
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await res.json().catch(() => ({}));
  return res.ok
    ? { success: true, data: answer }
    : { success: false, status: res.status, code: answer.error, error: answer.message, checks: answer.checks };
}
