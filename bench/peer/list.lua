-- Admin list of users: GET PEER_PATH (the first page of 50) with the admin
-- access token PEER_TOKEN. Every answer must be 200.
local c = require("common")
setup, done = c.setup, c.done

local path, token = c.env("PEER_PATH"), c.env("PEER_TOKEN")
local req

-- wrk.format fills in the Host header only once wrk has set wrk.headers,
-- which is after the script is loaded.
function init()
  req = wrk.format("GET", path, { ["Authorization"] = "Bearer " .. token })
end

function request()
  return req
end

function response(status, headers, body)
  if status ~= 200 then c.bad(status, body) end
end
