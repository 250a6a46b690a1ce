package waitingroom

import "github.com/redis/go-redis/v9"

// Every change to a room is one of these scripts. All keys of one event share
// the hash tag {event}, so each script runs atomically on one Redis (or one
// Redis Cluster slot), and every script reads the time from Redis itself
// (TIME), so API processes and admitters never disagree about "now".
// Times are milliseconds since the epoch.
//
// Keys of an event (see keys):
//   q        sorted set, the line: member user ID, score its place. Fans who
//            join before the sale opens get a uniformly random score in
//            [0, 1); later fans get the next value of seq (1, 2, ...), so
//            everyone who joined before opening is ahead of everyone after,
//            in a random order, and later arrivals are strictly FIFO. A
//            priority penalty adds places to the score.
//   hb       sorted set, user ID -> heartbeat deadline.
//   seq      counter of post-opening joins.
//   meta     hash, user ID -> "<join ms>|<device>".
//   pre      hash, user ID -> the random score drawn before opening (so a
//            rejoin before opening, even after being dropped, keeps its draw).
//   lease    sorted set, user ID -> lease expiry: the fans inside checkout.
//   li       hash, user ID -> "<lease id>|<device>|<window end ms>|<join ms>".
//   held     sorted set, user ID -> hold expiry: leased fans who hold seats.
//   strikes  hash, user ID -> holds that expired without a purchase.
//   state    hash: slot (last tick), lseq (lease ids), rate (admissions per
//            second x1000, a moving average), cap (capacity in force).
//   admitter the elected admitter's lease (owner token, short TTL).
//   soldout  set while the event is sold out (expires unless renewed).
//   waitlist sorted set, user ID -> when interest was recorded.

// joinScript puts a fan in line, or keeps their place.
// KEYS: q hb lease seq meta pre strikes soldout waitlist state
// ARGV: user, device, random score in [0,1), opens at ms, heartbeat ttl ms,
// places per strike beyond the first, extra places (risk)
// Returns {code, position, depth, now, new, rate x1000, capacity}; code 1
// waiting, 2 admitted (active lease), 3 sold out.
var joinScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local user = ARGV[1]
local st = redis.call('HMGET', KEYS[10], 'rate', 'cap')
local rate, cap = tonumber(st[1] or '0'), tonumber(st[2] or '0')
local leased = redis.call('ZSCORE', KEYS[3], user)
if leased and tonumber(leased) > now then
  return {2, 0, 0, now, 0, rate, cap}
end
local fresh = 0
if not redis.call('ZSCORE', KEYS[1], user) then
  local score
  if now < tonumber(ARGV[4]) then
    score = redis.call('HGET', KEYS[6], user)
    if not score then
      score = ARGV[3]
      redis.call('HSET', KEYS[6], user, score)
    end
    score = tonumber(score)
  else
    score = redis.call('INCR', KEYS[4])
  end
  local strikes = tonumber(redis.call('HGET', KEYS[7], user) or '0')
  score = score + math.max(0, strikes - 1) * tonumber(ARGV[6]) + tonumber(ARGV[7])
  redis.call('ZADD', KEYS[1], score, user)
  redis.call('HSET', KEYS[5], user, now .. '|' .. ARGV[2])
  fresh = 1
end
-- Admission removes line and heartbeat entries together; so does cleanup.
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[5]), user)
if redis.call('EXISTS', KEYS[8]) == 1 then
  redis.call('ZADD', KEYS[9], 'NX', now, user)
  return {3, redis.call('ZRANK', KEYS[1], user) + 1, redis.call('ZCARD', KEYS[1]), now, fresh, rate, cap}
end
return {1, redis.call('ZRANK', KEYS[1], user) + 1, redis.call('ZCARD', KEYS[1]), now, fresh, rate, cap}
`)

// statusScript reads many fans' state at once and refreshes the heartbeat
// of those whose client is alive (the batched form of a socket heartbeat).
// KEYS: q hb lease soldout waitlist state li
// ARGV: heartbeat ttl ms, then pairs: user, alive ("1" or "0")
// Returns {now, soldout, depth, rate x1000, capacity, then per user: code,
// position, lease expiry, lease info}; code 0 not in line, 1 waiting,
// 2 admitted, 3 sold out (still in line, interest recorded).
var statusScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local soldout = redis.call('EXISTS', KEYS[4])
local st = redis.call('HMGET', KEYS[6], 'rate', 'cap')
local out = {now, soldout, redis.call('ZCARD', KEYS[1]), tonumber(st[1] or '0'), tonumber(st[2] or '0')}
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV, 2 do
  local user = ARGV[i]
  local leased = redis.call('ZSCORE', KEYS[3], user)
  if leased and tonumber(leased) > now then
    table.insert(out, 2); table.insert(out, 0)
    table.insert(out, tonumber(leased)); table.insert(out, redis.call('HGET', KEYS[7], user) or '')
  else
    local rank = redis.call('ZRANK', KEYS[1], user)
    if not rank then
      table.insert(out, 0); table.insert(out, 0); table.insert(out, 0); table.insert(out, '')
    else
      if ARGV[i + 1] == '1' then
        redis.call('ZADD', KEYS[2], now + ttl, user)
      end
      local code = 1
      if soldout == 1 then
        redis.call('ZADD', KEYS[5], 'NX', now, user)
        code = 3
      end
      table.insert(out, code); table.insert(out, rank + 1); table.insert(out, 0); table.insert(out, '')
    end
  end
end
return out
`)

// leadScript takes or renews the admitter lease of an event.
// KEYS: admitter; ARGV: owner, ttl ms. Returns 1 when owner leads.
var leadScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`)

// tickScript is one admission tick: leadership and tick fencing, bounded
// cleanup of expired leases and silent fans, then admission of at most
// min(capacity - active leases, batch, free units) fans from the head of the
// line, re-checking each one's heartbeat as it is popped.
// KEYS: q hb lease meta state admitter soldout li
// ARGV: owner, admitter ttl ms, tick ms, opens at ms, capacity, batch,
// admission window ms, cleanup cap, free units (-1 unknown), sold-out ttl ms
// Returns {status, slot, now, stale dropped, stale skipped at the head,
// active leases, depth, expired leases, then pairs: user, join ms}; status
// 1 ran, 0 ran but not open yet, -1 another admitter leads, -2 this tick
// already ran, -3 ran but admitted nobody because free units are unknown,
// -4 sold out.
var tickScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local holder = redis.call('GET', KEYS[6])
if holder and holder ~= ARGV[1] then return {-1, 0, now, 0, 0, 0, 0, 0} end
redis.call('SET', KEYS[6], ARGV[1], 'PX', ARGV[2])
-- Fencing: one run per tick slot, whoever runs it.
local slot = math.floor(now / tonumber(ARGV[3]))
local last = tonumber(redis.call('HGET', KEYS[5], 'slot') or '-1')
if slot <= last then return {-2, slot, now, 0, 0, 0, 0, 0} end
redis.call('HSET', KEYS[5], 'slot', slot)
local cleanupCap = tonumber(ARGV[8])

-- Expired leases free their slots (bounded).
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, cleanupCap)
for _, user in ipairs(expired) do
  redis.call('ZREM', KEYS[3], user)
  redis.call('HDEL', KEYS[8], user)
end

-- Silent fans leave the line (bounded, so a huge abandoned line cannot
-- monopolise Redis; the re-check below covers what remains).
local stale = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, cleanupCap)
for _, user in ipairs(stale) do
  redis.call('ZREM', KEYS[1], user)
  redis.call('ZREM', KEYS[2], user)
  redis.call('HDEL', KEYS[4], user)
end

local active = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf')
local rate = tonumber(redis.call('HGET', KEYS[5], 'rate') or '0')
redis.call('HSET', KEYS[5], 'cap', ARGV[5])
local function finish(status, skipped, admitted, n)
  rate = math.floor(rate * 0.8 + 0.2 * n * 1000 * 1000 / tonumber(ARGV[3]))
  redis.call('HSET', KEYS[5], 'rate', rate)
  local out = {status, slot, now, #stale, skipped, active, redis.call('ZCARD', KEYS[1]), #expired}
  for _, v in ipairs(admitted) do table.insert(out, v) end
  return out
end
if now < tonumber(ARGV[4]) then return finish(0, 0, {}, 0) end
local free = tonumber(ARGV[9])
if free < 0 then return finish(-3, 0, {}, 0) end
if free == 0 then
  redis.call('SET', KEYS[7], '1', 'PX', ARGV[10])
  return finish(-4, 0, {}, 0)
end
redis.call('DEL', KEYS[7])

local attempts = math.min(tonumber(ARGV[5]) - active, tonumber(ARGV[6]), free)
local admitted = {}
local n, skipped, pops = 0, 0, 0
local window = now + tonumber(ARGV[7])
while n < attempts and pops < attempts + cleanupCap do
  local entry = redis.call('ZPOPMIN', KEYS[1], 1)
  if #entry == 0 then break end
  pops = pops + 1
  local user = entry[1]
  local beat = redis.call('ZSCORE', KEYS[2], user)
  local meta = redis.call('HGET', KEYS[4], user) or ''
  redis.call('ZREM', KEYS[2], user)
  redis.call('HDEL', KEYS[4], user)
  -- Cleanup is capped, so silent fans can still reach the head of the line:
  -- never admit one whose heartbeat has lapsed.
  if beat and tonumber(beat) > now then
    local joined, device = string.match(meta, '^(%d+)|(.*)$')
    local id = redis.call('HINCRBY', KEYS[5], 'lseq', 1)
    redis.call('ZADD', KEYS[3], window, user)
    redis.call('HSET', KEYS[8], user, id .. '|' .. (device or '') .. '|' .. window .. '|' .. (joined or now))
    table.insert(admitted, user)
    table.insert(admitted, tonumber(joined or now))
    n = n + 1
  else
    skipped = skipped + 1
  end
end
active = active + n
return finish(1, skipped, admitted, n)
`)

// checkScript checks that the fan's lease is active and is the one the pass
// names. KEYS: lease li; ARGV: user, lease id.
// Returns 1 ok, 0 no active lease, -1 the lease is another one.
var checkScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local leased = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not leased or tonumber(leased) <= now then return 0 end
local info = redis.call('HGET', KEYS[2], ARGV[1]) or ''
local id = string.match(info, '^([^|]*)')
if id ~= ARGV[2] then return -1 end
return 1
`)

// extendScript keeps an active lease alive until the hold ends and records
// the hold. KEYS: lease li held; ARGV: user, until ms. Returns 1 when
// extended, 0 when there was no active lease.
var extendScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local leased = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not leased or tonumber(leased) <= now or redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return 1
`)

// settleScript ends the extension of fans whose holds ended: after an
// unpaid end the lease lasts a moment more for the fan to choose again,
// within the admission window (or ends if that has passed); after a
// purchase it ends at once; strikes are recorded. KEYS: lease li held
// strikes; ARGV: the moment to choose again (ms), then triples user, how
// ("0" holding, "1" ended unpaid, "2" paid), strikes. Returns how many
// leases ended.
var settleScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rechoose = tonumber(ARGV[1])
local ended = 0
for i = 2, #ARGV, 3 do
  local user = ARGV[i]
  local strikes = tonumber(ARGV[i + 2])
  if strikes > 0 then redis.call('HSET', KEYS[4], user, strikes) else redis.call('HDEL', KEYS[4], user) end
  local how = ARGV[i + 1]
  if how == '1' or how == '2' then
    redis.call('ZREM', KEYS[3], user)
    local info = redis.call('HGET', KEYS[2], user) or ''
    local window = tonumber(string.match(info, '^[^|]*|[^|]*|(%d+)') or '0')
    local untilMs = math.min(window, now + rechoose)
    if how == '1' and untilMs > now and redis.call('ZSCORE', KEYS[1], user) then
      redis.call('ZADD', KEYS[1], 'XX', untilMs, user)
    else
      redis.call('ZREM', KEYS[1], user)
      redis.call('HDEL', KEYS[2], user)
      ended = ended + 1
    end
  end
end
return ended
`)

// offerScript admits a fan from the waitlist: a lease until the offer ends
// (or longer, if the fan already had one) with the offer's details, which
// the fan's new pass names. KEYS: lease li; ARGV: user, until ms, info.
var offerScript = redis.NewScript(`
redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
return 1
`)

// revokeScript ends a lease at once. KEYS: lease li held; ARGV: user.
var revokeScript = redis.NewScript(`
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1])
`)

// riskScript records the account against the client's IP address and device
// and returns how many accounts each has been seen with, and the account's
// flags. KEYS: ip hll, device hll, flags; ARGV: user, ttl seconds.
var riskScript = redis.NewScript(`
redis.call('PFADD', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('PFADD', KEYS[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return {redis.call('PFCOUNT', KEYS[1]), redis.call('PFCOUNT', KEYS[2]), tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')}
`)

// flagScript marks an account as behaving like a script. KEYS: flags;
// ARGV: user, flag bits, ttl seconds.
var flagScript = redis.NewScript(`
local old = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local bits = tonumber(ARGV[2])
if old % (bits * 2) < bits then old = old + bits end
redis.call('HSET', KEYS[1], ARGV[1], old)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return old
`)
