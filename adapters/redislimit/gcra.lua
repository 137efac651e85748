-- GCRA over several buckets at once, all or none (the Generic Cell Rate
-- Algorithm: the token bucket of the in-memory limiter, kept as one
-- number per bucket, its "theoretical arrival time").
--
-- KEYS[i]            the bucket of one limit for one client
-- ARGV[2i-1]         the limit's period, in microseconds
-- ARGV[2i]           the limit (requests per period, and the burst)
--
-- Returns {1, 0} when every bucket had a token and one was taken from
-- each, or {0, wait} (microseconds until every refusing bucket has a
-- token again) when one had none, and then nothing was taken.
--
-- The time is Redis' own (TIME), so that the nodes' clocks do not matter.
-- Scripts replicate their effects (Redis 5 and later), so reading TIME
-- before a write is allowed.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tats = {}
local wait = 0
for i, key in ipairs(KEYS) do
  local period = tonumber(ARGV[2 * i - 1])
  local interval = period / tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then
    tat = now
  end
  -- The request is admitted when the bucket, after it, would not hold
  -- more than a period's worth of debt: a burst of the limit.
  local after = tat + interval
  local allowed_at = after - period
  if allowed_at > now and allowed_at - now > wait then
    wait = allowed_at - now
  end
  tats[i] = after
end
if wait > 0 then
  return {0, math.ceil(wait)}
end
for i, key in ipairs(KEYS) do
  -- The bucket is full again, and so forgettable, once its time is
  -- past: the key expires then, so Redis holds only clients that are
  -- still paying for their recent requests. '%.0f' writes the
  -- microseconds whole, where tostring would round them to 14 digits.
  -- At least a millisecond: an interval below the resolution of a
  -- double near now (a fraction of a microsecond) would be no time.
  local ttl = math.max(1, math.ceil((tats[i] - now) / 1000))
  redis.call('SET', key, string.format('%.0f', tats[i]), 'PX', ttl)
end
return {1, 0}
