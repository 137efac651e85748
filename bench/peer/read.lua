-- Read of the signed-in user: GET PEER_PATH with the access tokens of
-- PEER_ACCESS (one a line), taken in turn. Every answer must be 200.
--
-- By default each thread goes round the whole list, starting elsewhere in
-- it. With PEER_SPLIT=1 (read-many) the threads share the list out
-- instead, thread k taking lines k+1, k+1+T, k+1+2T, … (T threads) in
-- order, round and round: no two threads present the same token, and
-- between two uses of a token its thread has presented each other token
-- of its part once while the other threads went on with theirs. Over
-- 20,000 tokens and 2 threads that is at least 9,999 + 1 other distinct
-- tokens (about 20,000 at one pace), so userd's verified-token cache, an
-- LRU of 10,000, never hits; with 4 threads, so long as none runs at
-- under a third of another's pace.
local c = require("common")
setup, done = c.setup, c.done

local path = c.env("PEER_PATH")
local all = c.lines(c.env("PEER_ACCESS"))
local split = os.getenv("PEER_SPLIT") == "1"
local tokens, i

function init()
  if split then
    tokens = c.share(all)
    i = 0
  else
    tokens = all
    i = (index or 0) * 97
  end
end

function request()
  i = i % #tokens + 1
  return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. tokens[i] })
end

function response(status, headers, body)
  if status ~= 200 then c.bad(status, body) end
end
