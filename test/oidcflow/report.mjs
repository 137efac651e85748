// report.mjs holds what both scripts (rp.mjs, cc.mjs) tell the test of
// an error: the library's code, and the server's OAuth error and status
// when it had them. startScript copies it beside the script it runs.

// say writes one JSON line to the test.
export const say = (v) => process.stdout.write(JSON.stringify(v) + '\n')

// failure is what the test learns of an error.
export async function failure(e) {
  const f = {
    name: e?.name,
    code: e?.code,
    message: e?.message,
    error: e?.error ?? e?.cause?.error ?? e?.cause?.[0]?.parameters?.error,
    status: e?.status ?? e?.response?.status,
    challenge: e?.cause?.[0]?.scheme,
  }
  // A challenge (401 with WWW-Authenticate) leaves the body unread: its
  // OAuth error is there.
  if (f.error === undefined && e?.response && !e.response.bodyUsed) {
    f.error = await e.response.json().then((b) => b?.error, () => undefined)
  }
  return f
}

// attempt runs f and returns {ok:true, value} or {ok:false, …failure}.
export async function attempt(f) {
  try {
    return { ok: true, value: await f() }
  } catch (e) {
    return { ok: false, ...(await failure(e)) }
  }
}
