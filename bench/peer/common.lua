-- Shared by the side-by-side scripts of bench/peer/run.sh (found through
-- LUA_PATH). wrk runs one Lua state per thread plus a main one: setup()
-- and done() run in the main state, the rest in each thread's.
--
-- Every answer that is not the expected status is counted and the first
-- few are kept, so that a run with errors shows them instead of passing
-- for a result.

local M = {}

M.threads = {}
local nthreads = 0

function M.lines(path)
  local t = {}
  local f = assert(io.open(path, "r"), "cannot open " .. path)
  for l in f:lines() do
    if l ~= "" then t[#t + 1] = l end
  end
  f:close()
  assert(#t > 0, path .. " is empty")
  return t
end

-- setup runs in the main state once per thread before it starts: it gives
-- each thread its index and the thread count, so that the threads can
-- take disjoint parts of a token pool.
function M.setup(thread)
  nthreads = nthreads + 1
  thread:set("index", nthreads - 1)
  M.threads[#M.threads + 1] = thread
end

-- share returns this thread's part of lines, in order: thread k (from 0)
-- takes lines k+1, k+1+T, k+1+2T, … of the T threads of PEER_THREADS, so
-- that no two threads present the same token. Called from init(), once
-- setup() has given the thread its index.
function M.share(lines)
  local nthreads = tonumber(M.env("PEER_THREADS"))
  local mine = {}
  for n, l in ipairs(lines) do
    if (n - 1) % nthreads == (index or 0) then mine[#mine + 1] = l end
  end
  assert(#mine > 0, "fewer lines than threads")
  return mine
end

-- bad records an unexpected answer in the thread's globals, where done()
-- reads them with thread:get.
errors, samples = 0, ""
local nsamples = 0
function M.bad(status, body)
  errors = errors + 1
  if nsamples < 3 then
    nsamples = nsamples + 1
    samples = samples .. string.format("    %d %s\n", status, string.sub(body or "", 1, 160))
  end
end

-- env reads a setting that run.sh must give.
function M.env(name)
  local v = os.getenv(name)
  assert(v, name .. " is not set")
  return v
end

-- done runs in the main state: one machine-readable line for run.sh, then
-- the samples of the unexpected answers.
function M.done(summary, latency)
  local errors, samples = 0, ""
  for _, t in ipairs(M.threads) do
    errors = errors + (t:get("errors") or 0)
    samples = samples .. (t:get("samples") or "")
  end
  local secs = summary.duration / 1e6
  io.write(string.format("PEER requests=%d rps=%.1f p50_ms=%.2f p99_ms=%.2f errors=%d socket_errors=%d\n",
    summary.requests, summary.requests / secs, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, errors,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  if samples ~= "" then io.write("  unexpected answers (the first three of each thread):\n" .. samples) end
end

return M
