-- Refresh with rotation: POST PEER_PATH with {"<PEER_KEY>":"<token>"}.
-- The refresh tokens of PEER_REFRESH (one a line, one per session) are
-- shared out among the PEER_THREADS threads; each request takes one from
-- its thread's queue and response() puts the rotated one (PEER_KEY of the
-- answer) back, so that every token is presented exactly once, as a
-- client does. A token whose answer is not 200 is gone: with fewer
-- tokens than connections the queue runs dry and the empty token sent
-- then is an error too, so a broken run cannot pass for a result.
local c = require("common")
setup, done = c.setup, c.done

local path = c.env("PEER_PATH")
local key = c.env("PEER_KEY")
local all = c.lines(c.env("PEER_REFRESH"))
local queue, head, tail = {}, 1, 0
local pattern = '"' .. key .. '"%s*:%s*"([^"]+)"'

function init()
  queue = c.share(all)
  tail = #queue
end

function request()
  local t = ""
  if head <= tail then
    t = queue[head]
    queue[head] = nil
    head = head + 1
  end
  return wrk.format("POST", path, { ["Content-Type"] = "application/json" },
    '{"' .. key .. '":"' .. t .. '"}')
end

function response(status, headers, body)
  local t = status == 200 and string.match(body, pattern)
  if not t then
    c.bad(status, body)
    return
  end
  tail = tail + 1
  queue[tail] = t
end
