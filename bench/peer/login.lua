-- Password login: POST PEER_PATH with {"email":…,"password":PEER_PASSWORD}
-- for the emails of PEER_EMAILS in turn (users who have logged in once
-- already, so that userd checks its own argon2id hash, not the imported
-- bcrypt one it replaces at the first login). Every answer must be 200.
local c = require("common")
setup, done = c.setup, c.done

local path = c.env("PEER_PATH")
local password = c.env("PEER_PASSWORD")
local emails = c.lines(c.env("PEER_EMAILS"))
local i

function init()
  i = (index or 0) * 97
end

function request()
  i = i % #emails + 1
  return wrk.format("POST", path, { ["Content-Type"] = "application/json" },
    '{"email":"' .. emails[i] .. '","password":"' .. password .. '"}')
end

function response(status, headers, body)
  if status ~= 200 then c.bad(status, body) end
end
