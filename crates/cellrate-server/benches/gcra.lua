-- A GCRA rate limit in one Redis script, as applications deploy one for want of a module:
-- KEYS[1] the key; ARGV max_burst, count_per_period, period (seconds), quantity, read as
-- redis-cell reads them (a bucket of max_burst + 1, one token every period / count).
-- Returns redis-cell's reply: {limited, limit, remaining, retry_after, reset_after}.
local limit = tonumber(ARGV[1]) + 1
local interval = tonumber(ARGV[3]) * 1000000 / tonumber(ARGV[2]) -- microseconds
local quantity = tonumber(ARGV[4])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then
  tat = now
end
local depth = limit * interval
local new_tat = tat + quantity * interval
if new_tat - depth > now then
  local retry = -1
  if quantity <= limit then
    retry = math.ceil((new_tat - depth - now) / 1000000)
  end
  return {1, limit, math.floor((depth - (tat - now)) / interval), retry, math.ceil((tat - now) / 1000000)}
end
if new_tat > now then
  redis.call('SET', KEYS[1], string.format('%d', math.ceil(new_tat)), 'PX', math.ceil((new_tat - now) / 1000))
end
return {0, limit, math.floor((depth - (new_tat - now)) / interval), -1, math.ceil((new_tat - now) / 1000000)}
