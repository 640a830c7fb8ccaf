"""Which instances are alive, in Redis: the scripts behind claims that outlive a dead owner.

Each instance keeps its own deadline in one hash, `{prefix}instances`
(instance id -> milliseconds on Redis's clock), pushing it `dead_after`
seconds ahead on every heartbeat, and the same deadline in each claim it
holds (its `until`), pushed out in the same beat. The deadline is the
instance's own: an instance whose heartbeat is slower (a larger
`INSTANCE_DEAD_SECONDS`) is judged by the promise it made, never by the
judge's settings. Every time is Redis's own (`TIME`), so the hosts'
clocks never enter into it.

Whether a claim's holder is alive is read from the claim alone, inside
the script that takes or reads it: a new turn takes a dead holder's
conversation at once, a stop finds no run there, the list of runs drops
it. A script touches only the keys of one user, as a Redis Cluster
requires (the hash lives in one slot, the claims in their users'), and no
key is read by every turn. A claim with no `until` (written by an older
version during a rolling update) counts as alive; the sweep frees it once
its instance is dead.

An instance that drains hands its running turns over and resigns
(`RESIGN_LUA`, and `RESIGNED_CLAIM_LUA` on each claim it holds): it counts as
dead at once. A dead instance's running turn is taken over by another
(`TAKE_OVER_LUA`) in one step, so of instances racing for it one wins: the
claim must still name the dead instance. That the instance is dead is the
sweep's judgement, from the hash; the step cannot read the hash again (in a
Cluster it is in another slot), so an instance that beat again between the
two, being only slow, finds its claim another's at its next heartbeat and
at its next copy of the run's log, and stops, while the run goes on at the
other. The run keeps its task id and the claim names the new instance.

A turn the sweep cannot carry on ends `interrupted`, also in one step in Redis
first (`GIVE_UP_LUA`): the sweep takes the claim from the dead instance, and
marks the turn only if it did (or nobody held it). An instance that took the
turn over first keeps it, however the sweeps of several instances overlap;
the rows' conditional UPDATEs settle whatever Redis cannot (a claim already
gone): a turn is carried on or interrupted, never both.

The sweep finds the dead from the hash: any instance holding turns stored
`running` that the hash does not know is entered with a deadline `grace`
away (Redis may have restarted empty, and a live instance beats again
within seconds of its reconnect), and every instance past its deadline is
reported until its claims have expired too (the claim TTL), then
forgotten. An entry the sweep made is stored negated: the instance's next
heartbeat sees that Redis lost it, exactly as if there were no entry, and
takes its claims back.
"""

from __future__ import annotations

_NOW = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

HOLDER_LUA = (
    _NOW
    + """
local function holder_dead(value)
  local deadline = cjson.decode(value)['until']
  return deadline ~= nil and tonumber(deadline) < now_ms()
end
local function with_deadline(value, life)
  return string.sub(value, 1, -2) .. ',"until":' .. (now_ms() + tonumber(life)) .. '}'
end
"""
)
"""Whether a claim's holder is dead; a claim's value (JSON) with its holder's deadline added."""

CLAIM_LUA = (
    HOLDER_LUA
    + """
-- KEYS: claim, the user's list of runs. ARGV: claim value, TTL in ms, task id, the turn as
-- listed ('' for none), the instance's life in ms. Taken when free (one SET, the usual
-- case) or held by a dead instance.
local value = with_deadline(ARGV[1], ARGV[5])
if not redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[2]) then
  local held = redis.call('GET', KEYS[1])
  if held and not holder_dead(held) then return 0 end
  redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], ARGV[3], ARGV[4]) end
return 1
"""
)

LIVE_CLAIM_LUA = (
    HOLDER_LUA
    + """
-- KEYS: claim. The claim's value while its holder is alive, else nil.
local held = redis.call('GET', KEYS[1])
if held and not holder_dead(held) then return held end
return false
"""
)

KEEP_LUA = (
    HOLDER_LUA
    + """
-- KEYS: claim, the user's list of runs. ARGV: claim value, TTL in ms, the turn as listed
-- ('' for none), '1' when Redis lost this instance (take a missing claim again), the
-- instance's life in ms. 1: ours, its deadline pushed out; 2: taken again; 3: gone
-- (expired); 0: another task's now; 4: another instance's (it took the run over).
local mine = cjson.decode(ARGV[1])
local held = redis.call('GET', KEYS[1])
if held then
  local claim = cjson.decode(held)
  if claim['task_id'] ~= mine['task_id'] then return 0 end
  if claim['instance'] ~= mine['instance'] then return 4 end
  redis.call('SET', KEYS[1], with_deadline(ARGV[1], ARGV[5]), 'PX', ARGV[2])
  return 1
end
if ARGV[4] ~= '1' then return 3 end
redis.call('SET', KEYS[1], with_deadline(ARGV[1], ARGV[5]), 'PX', ARGV[2])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[2], mine['task_id'], ARGV[3]) end
return 2
"""
)

BEAT_LUA = (
    _NOW
    + """
-- KEYS: instances. ARGV: instance id, its life in ms. 1 when Redis had lost the instance:
-- no entry, or only the one a sweep made (negated).
local before = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], now_ms() + tonumber(ARGV[2]))
if before == false or tonumber(before) < 0 then return 1 end
return 0
"""
)

SWEEP_LUA = (
    _NOW
    + """
-- KEYS: instances. ARGV: grace ms, kept ms, then the instances holding running turns.
-- The instances past their deadline; unknown ones enter with the grace, old ones leave.
local now = now_ms()
for i = 3, #ARGV do
  redis.call('HSETNX', KEYS[1], ARGV[i], -(now + tonumber(ARGV[1])))
end
local dead = {}
local entries = redis.call('HGETALL', KEYS[1])
for i = 1, #entries, 2 do
  local deadline = math.abs(tonumber(entries[i + 1]))
  if deadline < now - tonumber(ARGV[2]) then
    redis.call('HDEL', KEYS[1], entries[i])
  elseif deadline < now then
    table.insert(dead, entries[i])
  end
end
return dead
"""
)

GIVE_UP_LUA = """
-- KEYS: claim. ARGV: the dead instance, this instance. The sweep ends the dead instance's
-- turn (`interrupted`) unless another instance took it over: 1 when the claim was the dead
-- one's, now this instance's (so none takes the turn over from here: `TAKE_OVER_LUA` wants
-- the dead one), or nobody's; 0 when another instance holds it. The holder's deadline stays
-- the dead one's: a new turn may take the conversation at once.
local held = redis.call('GET', KEYS[1])
if not held then return 1 end
local claim = cjson.decode(held)
if claim['instance'] ~= ARGV[1] then return 0 end
claim['instance'] = ARGV[2]
redis.call('SET', KEYS[1], cjson.encode(claim), 'KEEPTTL')
return 1
"""

FREE_LUA = """
-- KEYS: claim. ARGV: the instance, done channel, done message. Deleted only if still its.
local held = redis.call('GET', KEYS[1])
if held and cjson.decode(held)['instance'] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return 1
end
return 0
"""


TAKE_OVER_LUA = (
    HOLDER_LUA
    + """
-- KEYS: claim, the conversation's latest run. ARGV: the dead instance, the run's agent type,
-- this instance, TTL in ms, this instance's life in ms, '1' when this instance's last
-- take-over of it went unanswered and it runs nothing there. Takes the claim when the dead
-- instance holds it, or nobody does and the latest run is kept, or (with '1') this instance
-- does: that take-over ran, its reply lost; the run's task id, or nil: another instance
-- holds it (took it over first, or a new turn took the conversation), or nothing of the
-- run is kept.
local held = redis.call('GET', KEYS[1])
local task_id
if held then
  local claim = cjson.decode(held)
  local left = claim['instance'] == ARGV[3] and ARGV[6] == '1'
  if claim['instance'] ~= ARGV[1] and not left then return false end
  task_id = claim['task_id']
else
  task_id = redis.call('GET', KEYS[2])
  if not task_id then return false end
end
local value = cjson.encode({task_id = task_id, agent_type = ARGV[2], instance = ARGV[3]})
redis.call('SET', KEYS[1], with_deadline(value, ARGV[5]), 'PX', ARGV[4])
return task_id
"""
)

RESIGN_LUA = (
    _NOW
    + """
-- KEYS: instances. ARGV: this instance. Its deadline is now: the others count it dead at
-- once, and take over the turns it handed over (a drain), as they would a dead one's.
redis.call('HSET', KEYS[1], ARGV[1], now_ms() - 1)
return 1
"""
)

HAND_BACK_LUA = (
    _NOW
    + """
-- KEYS: claim. ARGV: the run's task id, this instance, the dead instance. A take-over that
-- could not go on (an outage past the claim) gives the claim back, held by the dead
-- instance past its deadline as before, so the next sweep, here or elsewhere, takes it
-- over again; 1 when it was still this instance's take-over.
local held = redis.call('GET', KEYS[1])
if not held then return 0 end
local claim = cjson.decode(held)
if claim['task_id'] ~= ARGV[1] or claim['instance'] ~= ARGV[2] then return 0 end
claim['instance'] = ARGV[3]
claim['until'] = now_ms() - 1
redis.call('SET', KEYS[1], cjson.encode(claim), 'KEEPTTL')
return 1
"""
)

RESIGNED_CLAIM_LUA = (
    _NOW
    + """
-- KEYS: claim. ARGV: this instance. A claim it holds counts as held by the dead from now,
-- as the instance itself does (`RESIGN_LUA`); 1 when it was this instance's.
local held = redis.call('GET', KEYS[1])
if not held then return 0 end
local claim = cjson.decode(held)
if claim['instance'] ~= ARGV[1] then return 0 end
claim['until'] = now_ms() - 1
redis.call('SET', KEYS[1], cjson.encode(claim), 'KEEPTTL')
return 1
"""
)
