-- Minting for read-many (not a measured load): refreshes the sessions of
-- PEER_REFRESH (one refresh token a line) in turn, about PEER_PER times
-- each, and writes every answer's access token (PEER_ACCESS_KEY) to
-- PEER_MINT_OUT.<thread>, one a line. The sessions are shared out among
-- the PEER_THREADS threads as refresh.lua does: each thread keeps a queue
-- of its sessions' refresh tokens, takes the oldest for each refresh and
-- puts the answer's rotated token (PEER_KEY) at the back, so the chains
-- advance round by round, each refresh presenting the token the previous
-- one of its session rotated to. A thread makes PEER_PER distinct tokens
-- for each of its sessions: a token it already has is not counted and
-- the chain goes on (GoTrue's tokens have no jti, so two refreshes of a
-- session within one second give the same one). Once it has them all it
-- writes PEER_MINT_OUT.<thread>.done and stops (the answers of its
-- refreshes still under way are let go), and run.sh ends wrk when every
-- thread has.
-- A connection that finds nothing to send (every chain of its thread
-- under way, or all tokens made) sends GET PEER_IDLE_PATH, whose answer
-- (200, no token) is let go. A refresh whose answer is not 200 with both
-- tokens loses its chain and is counted as an error, which fails the
-- run.
local c = require("common")
setup = c.setup

local path = c.env("PEER_PATH")
local idle = c.env("PEER_IDLE_PATH")
local akey, rkey = c.env("PEER_ACCESS_KEY"), c.env("PEER_KEY")
local all = c.lines(c.env("PEER_REFRESH"))
local per = tonumber(c.env("PEER_PER"))
local prefix = c.env("PEER_MINT_OUT")
local apattern = '"' .. akey .. '"%s*:%s*"([^"]+)"'
local rpattern = '"' .. rkey .. '"%s*:%s*"([^"]+)"'
local queue, head, tail = {}, 1, 0
-- want: the distinct tokens this thread makes; got: made so far; seen:
-- the tokens made. sent, answered, dups and idles are read by done().
local want, got, seen = 0, 0, {}
sent, answered, dups, idles = 0, 0, 0, 0
local out, idlereq

function init()
  queue = c.share(all)
  tail = #queue
  want = tail * per
  out = assert(io.open(prefix .. "." .. (index or 0), "w"))
  idlereq = wrk.format("GET", idle)
end

function request()
  if got >= want or head > tail then return idlereq end
  local t = queue[head]
  queue[head] = nil
  head = head + 1
  sent = sent + 1
  return wrk.format("POST", path, { ["Content-Type"] = "application/json" },
    '{"' .. rkey .. '":"' .. t .. '"}')
end

function response(status, headers, body)
  local a = string.match(body, apattern)
  local r = string.match(body, rpattern)
  if status == 200 and not a and not r then -- an idle GET
    idles = idles + 1
    return
  end
  if status ~= 200 or not a or not r then
    c.bad(status, body)
    return
  end
  answered = answered + 1
  tail = tail + 1
  queue[tail] = r
  if seen[a] then
    dups = dups + 1
    return
  end
  if got == want then return end -- one of the last round's extra
  seen[a] = true
  out:write(a, "\n")
  got = got + 1
  if got == want then
    out:close()
    assert(io.open(prefix .. "." .. (index or 0) .. ".done", "w")):close()
    wrk.thread:stop()
  end
end

function done(summary, latency)
  c.done(summary, latency)
  for k, t in ipairs(c.threads) do
    io.write(string.format("MINT thread=%d refreshes=%d answered=%d repeated=%d idle=%d\n", k - 1,
      t:get("sent"), t:get("answered"), t:get("dups"), t:get("idles")))
  end
end
