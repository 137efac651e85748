-- Read of the signed-in user: GET PEER_PATH with the access tokens of
-- PEER_ACCESS (one a line, of distinct users), taken in turn, each thread
-- starting elsewhere in the list. Every answer must be 200.
local c = require("common")
setup, done = c.setup, c.done

local path = c.env("PEER_PATH")
local tokens = c.lines(c.env("PEER_ACCESS"))
local i

function init()
  i = (index or 0) * 97
end

function request()
  i = i % #tokens + 1
  return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. tokens[i] })
end

function response(status, headers, body)
  if status ~= 200 then c.bad(status, body) end
end
