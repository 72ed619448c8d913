import type { Cluster, Redis } from 'ioredis';

// The thread store's Lua scripts: every write to a thread's keys is one of them, so each is atomic. Each names keys
// of one hash slot only (a thread's keys share its \`{threadId}\` hash tag; a list's two sets share theirs), so that
// they run on a Redis Cluster as on one server.

/** The command connection with the store's scripts defined on it (defineScripts). */
export type ScriptedRedis = (Redis | Cluster) & {
  cgAppendMany(...args: (string | number)[]): Promise<string[]>;
  cgAppendOnNode(...args: (string | number)[]): Promise<string[]>;
  cgClaim(...args: (string | number)[]): Promise<[string, string, string, string, string, string, string, string]>;
  cgRelease(...args: (string | number)[]): Promise<number>;
  cgReleaseUnanswered(...args: (string | number)[]): Promise<number>;
  cgOpen(...args: (string | number)[]): Promise<string | [string, string, string]>;
  cgAppend(...args: (string | number)[]): Promise<string>;
  cgAppendEvents(...args: (string | number)[]): Promise<string>;
  cgListThread(...args: (string | number)[]): Promise<number>;
  cgUpdateThread(...args: (string | number)[]): Promise<[number, string, string, string]>;
  cgRemoveThread(...args: (string | number)[]): Promise<[number, string]>;
  cgReadThread(...args: (string | number)[]): Promise<ThreadReply>;
  cgReadRun(...args: (string | number)[]): Promise<RunReply>;
};

/** A stream's entries as XRANGE answers them: [id, [field, value, …]]. */
export type LogEntries = [string, string[]][];

/**
 * cgReadThread's answer: [] for a thread with no run, else its `meta` and `states` hashes (flat field/value lists),
 * its run ids (oldest first), each run's hash (in the same order), and the latest run's log when it is running.
 */
export type ThreadReply = [] | [string[], string[], string[], string[][], LogEntries];

/** cgReadRun's answer: the thread's transcript (null when none or not asked for), the run's hash (flat), its log. */
export type RunReply = [string | null, string[], LogEntries];

/**
 * A thread's list, named from its record's principal and agent under a prefix (`listOf`, as RedisRecords.listKey names
 * it): each piece with '%', ':', '{' and '}' percent-encoded, so that the two pieces of a key can never run into each
 * other, nor end its hash tag early (`esc`, the same as \`listKeyPart\` in list-records.ts).
 */
const LIST_LUA = `local function esc(s)
  return (string.gsub(s, '[%%:{}]', function(c) return string.format('%%%02X', string.byte(c)) end))
end
local function listOf(prefix, meta, agent)
  return prefix .. '{' .. esc(redis.call('HGET', meta, 'principal') or '') .. ':' .. esc(agent) .. '}'
end`;

// Every append script publishes what it stored on the run's live channel, unless the channel is "" (the store
// publishes after the WAIT for replicas instead: records.ts, waitReplicas). \`PUBLISH\` below is SPUBLISH on a Redis
// Cluster (defineScripts): a live channel carries its thread's hash tag, so the shard that stores a batch is the one
// that tells its followers, and a cluster does not forward every token to every node.

/**
 * What every append script shares: a Lua function that checks a run's record and appends one batch of
 * its events, answering ok, missing (no record), gap (out of order, or the log is not at `expected`,
 * when that is not ""), dup (already stored) or finished (ended by another instance).
 *
 * `expected` is given only by the write that ends a run from its stored events, with no instance to end it
 * (InstanceLeases.endRun: the run's instance lost its lease, a stop found it gone, or the instance can no longer write
 * a record Redis lost part of; then the ending may start past the stored log's end, see the branch). Its first
 * sequence is kept as the record's `endedFrom`: a batch of the run's own instance that reaches it (an instance that
 * was only paused, and goes on) is answered finished, not dup, since those numbers name the ending events. A batch
 * below it was stored by the run's own instance (a write sent again after its answer was lost): dup; when a WAIT
 * follows (`waited`: the callers publish nothing themselves then, their channel is ""), with the record's `last`
 * written again unchanged so that the WAIT on this connection covers the earlier write (see the branch).
 */
const APPEND_LUA = `local function append(run, log, first, last, events, expected, waited)
  local status = redis.call('HGET', run, 'status')
  if not status then return 'missing' end
  local storedText = redis.call('HGET', run, 'last')
  local stored = tonumber(storedText)
  if expected ~= '' and stored ~= tonumber(expected) then return 'gap' end
  first = tonumber(first)
  if first <= stored then
    local endedFrom = redis.call('HGET', run, 'endedFrom')
    if endedFrom and tonumber(last) >= tonumber(endedFrom) then return 'finished' end
    -- Stored by an earlier attempt, maybe on another connection whose answer was lost. With a WAIT to follow
    -- (REDIS_WAIT_REPLICAS: \`waited\`), written again, unchanged, so that this connection's WAIT covers that write
    -- too: Redis 7.2 and later count in WAIT only the writes a connection itself propagated.
    if waited then redis.call('HSET', run, 'last', storedText) end
    return 'dup'
  end
  if status ~= 'running' then return 'finished' end
  -- An ending (\`expected\`) may start past stored + 1: its instance's clients were shown numbers from a part of the
  -- log Redis has since lost (an older snapshot), which the ending skips so that no number names two events. (The
  -- "dup" above then also answers a batch inside the skipped numbers; none comes: that run's log has given up.)
  if first ~= stored + 1 and expected == '' then return 'gap' end
  -- Each batch's entry is numbered after its first event (RedisRecords.readLog), so that a reader can start at its
  -- place. A log an earlier version started (numbered by time) is carried on as it was.
  if not pcall(redis.call, 'XADD', log, string.format('0-%d', first + 1), 'e', events) then
    redis.call('XADD', log, '*', 'e', events)
  end
  redis.call('HSET', run, 'last', last)
  if expected ~= '' then redis.call('HSET', run, 'endedFrom', first) end
  return 'ok'
end`;

/**
 * The transcript's message ids, kept beside it in the thread's meta (message-ids.ts): `ids`, and `idsOf`, the
 * length of the transcript they are of, so that a transcript written without them (by an earlier version, during a
 * rolling upgrade) is not taken with ids of another, unless it has exactly the same length: then a run's recorded new
 * messages may count one it repeated, until the next run's end writes the ids again. `keepIds` writes them for a
 * transcript of `length` bytes, or drops them ("": not known).
 */
const IDS_LUA = `local function concatIds(a, b)
  if a == '' or b == '' then return '' end
  return a .. string.sub(b, 2)
end
local function keepIds(meta, ids, length)
  if ids == '' then
    redis.call('HDEL', meta, 'ids', 'idsOf')
  else
    redis.call('HSET', meta, 'ids', ids, 'idsOf', length)
  end
end`;

/**
 * The run holding a thread's lock ("<runId> <instance>", cgClaim; nil for none), and whether it is `runId`: a run id
 * may hold spaces (a client names it), an instance id holds none, so the instance is what follows the last space. The
 * same reading as `lockHolder` in records.ts.
 */
const HELD_BY_LUA = `local function lockRun(holder)
  return holder and string.match(holder, '^(.*) [^ ]+$')
end
local function heldBy(holder, runId)
  return lockRun(holder) == runId
end`;

/**
 * What cgOpen and cgAppend (a run's end, and the batches that renew its thread's expiry) share: a Lua function that
 * keeps every stored run's record and log at least as long as the thread (its `meta`, which they have just given
 * `ttl` seconds) without touching each at every run. The runs are renewed together, to 1.5 TTL, only when the last
 * renewal (`meta`'s `runsUntil`, on Redis's clock) would not cover a TTL from now: once every half TTL a thread is
 * used, however many runs it keeps. Otherwise only `runId`'s keys (a run that has just ended) are set to expire with
 * the others. So old runs may outlive their thread by up to
 * half a TTL, and a run's cost does not grow with the runs stored.
 */
const KEEP_RUNS_LUA = `local function keepRuns(meta, runs, prefix, ttl, runId)
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local untilMs = tonumber(redis.call('HGET', meta, 'runsUntil') or '0')
  if untilMs < now + ttl * 1000 then
    untilMs = now + ttl * 1500
    for _, id in ipairs(redis.call('LRANGE', runs, 0, -1)) do
      redis.call('PEXPIREAT', prefix .. 'run:' .. id, untilMs)
      redis.call('PEXPIREAT', prefix .. 'log:' .. id, untilMs)
    end
    redis.call('HSET', meta, 'runsUntil', untilMs)
  elseif runId then
    redis.call('PEXPIREAT', prefix .. 'run:' .. runId, untilMs)
    redis.call('PEXPIREAT', prefix .. 'log:' .. runId, untilMs)
  end
end`;

/** The store's Lua scripts: [number of keys, source]. Keys of other runs are built from the thread's key prefix. */
const SCRIPTS: Record<string, [number | null, string]> = {
  // KEYS: lock, run (of the proposed id), meta, runs, deletedRuns (cgRemoveThread: ids no new run takes). ARGV:
  // proposed id, fresh id, instance, claim timeout (ms), owner ("" for none), ttl (s), agent id, name ("" for none),
  // now (ms), list key prefix, then any number of the request's message ids. Answers {'forbidden'} (another principal's
  // thread), {'busy', holder}, or {'ok', run id, transcript, list, previous list, archived, ids, claim}: when the
  // thread's transcript has one of the request's ids and its ids are kept (\`ids\`, written with the transcript whose
  // length is \`idsOf\`: message-ids.ts), the transcript's ids and "" for the transcript, else the transcript and ""
  // for the ids. A thread that belongs to no one becomes the owner's. The claim is the thread's latest run: its list
  // entry (agent and creation time when new, name when it has none, lastRunAt) is written here; \`list\` names the
  // sorted sets it is to be put first in (\`{list}:all\`, and \`{list}:active\` unless archived: cgListThread, in their
  // own hash slot), \`previous list\` those it was in when they change (an unowned thread taken by its first owner),
  // else "". \`claim\` names this claim, "epoch:n" (meta's \`epoch\`, made with the thread, and its count of
  // \`claims\`), which cgOpen checks.
  cgClaim: [
    5,
    `${LIST_LUA}
local principal = redis.call('HGET', KEYS[3], 'principal')
if ARGV[5] ~= '' and principal and principal ~= ARGV[5] then return {'forbidden', '', ''} end
local holder = redis.call('GET', KEYS[1])
if holder then return {'busy', holder, ''} end
if ARGV[5] ~= '' and not principal then
  redis.call('HSET', KEYS[3], 'principal', ARGV[5])
  if redis.call('TTL', KEYS[3]) < 0 then redis.call('EXPIRE', KEYS[3], ARGV[6]) end
end
local runId = ARGV[1]
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('LPOS', KEYS[4], ARGV[1]) or
  redis.call('SISMEMBER', KEYS[5], ARGV[1]) == 1 then runId = ARGV[2] end
redis.call('SET', KEYS[1], runId .. ' ' .. ARGV[3], 'PX', ARGV[4])
redis.call('HSET', KEYS[3], 'claimToken', ARGV[2])
-- This claim's name, "epoch:n": the thread's epoch (a random id, new each time the thread is made again, after
-- a deletion) and its count of claims, which cgOpen checks.
local epoch = redis.call('HGET', KEYS[3], 'epoch')
if not epoch then
  epoch = ARGV[2]
  redis.call('HSET', KEYS[3], 'epoch', epoch)
end
local claim = epoch .. ':' .. redis.call('HINCRBY', KEYS[3], 'claims', 1)
local now = tonumber(ARGV[9])
local agent = redis.call('HGET', KEYS[3], 'agent')
if not agent then
  agent = ARGV[7]
  redis.call('HSET', KEYS[3], 'agent', agent, 'createdAt', now)
end
if ARGV[8] ~= '' and not redis.call('HGET', KEYS[3], 'name') then redis.call('HSET', KEYS[3], 'name', ARGV[8]) end
redis.call('HSET', KEYS[3], 'lastRunAt', now, 'updatedAt', now)
local list = listOf(ARGV[10], KEYS[3], agent)
local previous = redis.call('HGET', KEYS[3], 'list')
if not previous or previous == list then previous = '' end
redis.call('HSET', KEYS[3], 'list', list)
if redis.call('TTL', KEYS[3]) < 0 then redis.call('EXPIRE', KEYS[3], ARGV[6]) end
local archived = redis.call('HGET', KEYS[3], 'archived') or ''
if #ARGV > 10 then
  local kept = redis.call('HMGET', KEYS[3], 'ids', 'idsOf')
  if kept[1] and tonumber(kept[2]) == redis.call('HSTRLEN', KEYS[3], 'transcript') then
    for i = 11, #ARGV do
      if string.find(kept[1], '\0' .. ARGV[i] .. '\0', 1, true) then
        return {'ok', runId, '', list, previous, archived, kept[1], claim}
      end
    end
  end
end
return {'ok', runId, redis.call('HGET', KEYS[3], 'transcript') or '[]', list, previous, archived, '', claim}`,
  ],
  // KEYS: a list's \`…:all\` and \`…:active\` sorted sets. ARGV: thread id, lastRunAt (ms), ttl (s), archived ("1" or
  // ""). Puts the thread in the list at its lastRunAt (never lowering a later one: a claim and an unarchive may cross)
  // and in or out of the active set; entries older than any live thread can be (their threads expired) are dropped.
  cgListThread: [
    2,
    `redis.call('ZADD', KEYS[1], 'GT', ARGV[2], ARGV[1])
if ARGV[4] == '1' then redis.call('ZREM', KEYS[2], ARGV[1]) else redis.call('ZADD', KEYS[2], 'GT', ARGV[2], ARGV[1]) end
local oldest = '(' .. (tonumber(ARGV[2]) - tonumber(ARGV[3]) * 1000 - 86400000)
for _, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', oldest)
  redis.call('EXPIRE', key, ARGV[3])
end
return 1`,
  ],
  // KEYS: lock. ARGV: run id. Frees a claim of that run (heldBy: the lock is "<runId> <instance>", and a run id may
  // hold spaces, an instance id none: run "a" does not hold the lock of run "a b").
  cgRelease: [
    1,
    `${HELD_BY_LUA}
if heldBy(redis.call('GET', KEYS[1]), ARGV[1]) then return redis.call('DEL', KEYS[1]) end
return 0`,
  ],
  // KEYS: lock, meta. ARGV: a claim's fresh id. Frees the thread if the claim that holds it is the one sent with that
  // fresh id (meta's \`claimToken\`, which each claim that takes the thread writes): a claim whose answer never came
  // (RedisRecords.claim), taken by Redis only after. Not a claim of the same run id sent again, which holds the thread
  // under another token.
  cgReleaseUnanswered: [
    2,
    `if redis.call('HGET', KEYS[2], 'claimToken') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`,
  ],
  // KEYS: lock, meta, runs, run, log. ARGV: run id, instance, input (JSON; "" when it is the transcript the thread
  // holds followed by the new input: the run's \`extends\`), started at, ttl (s), max runs, thread key prefix, reset
  // ("1" to write the record again from nothing), new input (JSON), ids (message-ids.ts: of the input when it is
  // written, else of the new input; "" when not known), how long a dropped run stays marked (ms: deletedRuns), the
  // run's claim (cgClaim's "epoch:n"; "" for none), its principal ("" for none), its agent id, its thread's name (""
  // for none), the list key prefix. Answers 'deleted' when this run held the thread when it was removed, or was one of
  // its runs, or was dropped for newer ones (deletedRuns), 'lost' when another run holds the thread, 'superseded' when
  // the thread was claimed again since this run's claim, made again since (another epoch) or is gone (deleted) on a
  // first open (the claim lapsed, say while Redis could not be reached, and another run took the thread, maybe ran and
  // ended: its transcript must not be written over, nor a deleted thread made again); 'ok' otherwise (at once when the
  // record is already this instance's: an open sent again), or, for a record written again from nothing, {'relisted',
  // list, archived}: the thread's list entry fields, written again as cgClaim writes them when Redis had lost the
  // thread whole, and the list its caller puts it in again (cgListThread; every time, as an answer lost on the way
  // leaves the next attempt to). The instance lists the run among its own (\`instance:{id}:runs\`, another slot)
  // before it opens it.
  cgOpen: [
    5,
    `${KEEP_RUNS_LUA}
${IDS_LUA}
${LIST_LUA}
local mine = ARGV[1] .. ' ' .. ARGV[2]
if redis.call('GET', ARGV[7] .. 'deleted') == mine then return 'deleted' end
if redis.call('SISMEMBER', ARGV[7] .. 'deletedRuns', ARGV[1]) == 1 then return 'deleted' end
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= mine then return 'lost' end
-- Claimed again since this run's claim (ARGV[12], "epoch:n"), or made again (another epoch), or gone since (deleted:
-- not made again by this open; a rebuild, after Redis lost the thread, is). A thread restored from an older snapshot
-- may count fewer claims: that is no later one.
if ARGV[12] ~= '' then
  local at = string.find(ARGV[12], ':', 1, true)
  local kept = redis.call('HMGET', KEYS[2], 'epoch', 'claims')
  if kept[1] then
    if kept[1] ~= string.sub(ARGV[12], 1, at - 1) or tonumber(kept[2]) > tonumber(string.sub(ARGV[12], at + 1)) then
      return 'superseded'
    end
  elseif ARGV[8] == '' then
    return 'superseded'
  end
end
-- The thread stays its principal's: a record written again from nothing (Redis lost it) is theirs again, and one
-- another principal has claimed since is not written over.
if ARGV[13] ~= '' then
  local principal = redis.call('HGET', KEYS[2], 'principal')
  if principal and principal ~= ARGV[13] then return 'superseded' end
  if not principal then redis.call('HSET', KEYS[2], 'principal', ARGV[13]) end
end
-- This instance's record, opened already: an open sent again (after the checks above, so that a run of the same id
-- that claimed the thread since is not taken for this one).
if ARGV[8] == '' and redis.call('HGET', KEYS[4], 'owner') == ARGV[2] then return 'ok' end
local answer = 'ok'
if ARGV[8] == '1' then
  if not redis.call('HGET', KEYS[2], 'agent') then
    redis.call('HSET', KEYS[2], 'agent', ARGV[14], 'createdAt', ARGV[4], 'lastRunAt', ARGV[4], 'updatedAt', ARGV[4],
      'list', listOf(ARGV[16], KEYS[2], ARGV[14]))
    if ARGV[15] ~= '' then redis.call('HSET', KEYS[2], 'name', ARGV[15]) end
  end
  local listed = redis.call('HMGET', KEYS[2], 'list', 'archived')
  if listed[1] then answer = {'relisted', listed[1], listed[2] or ''} end
end
redis.call('SET', KEYS[1], mine)
redis.call('DEL', KEYS[5])
redis.call('HDEL', KEYS[4], 'finishedAt', 'endedFrom')
local extends = ''
if ARGV[3] == '' then extends = '1' end
redis.call('HSET', KEYS[4], 'status', 'running', 'last', -1, 'startedAt', ARGV[4], 'owner', ARGV[2],
  'newInput', ARGV[9], 'extends', extends, 'newIds', extends == '1' and ARGV[10] or '')
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[2], 'transcript', ARGV[3])
  keepIds(KEYS[2], ARGV[10], #ARGV[3])
end
redis.call('HSET', KEYS[2], 'latest', ARGV[1])
if not redis.call('LPOS', KEYS[3], ARGV[1]) then redis.call('RPUSH', KEYS[3], ARGV[1]) end
while redis.call('LLEN', KEYS[3]) > tonumber(ARGV[6]) do
  local old = redis.call('LPOP', KEYS[3])
  redis.call('DEL', ARGV[7] .. 'run:' .. old, ARGV[7] .. 'log:' .. old)
  -- A run dropped is one no instance may write again (one that was only paused, whose run another ended).
  redis.call('SADD', ARGV[7] .. 'deletedRuns', old)
  redis.call('PEXPIRE', ARGV[7] .. 'deletedRuns', ARGV[11])
end
for _, key in ipairs({KEYS[2], KEYS[3], KEYS[4]}) do redis.call('EXPIRE', key, ARGV[5]) end
keepRuns(KEYS[2], KEYS[3], ARGV[7], tonumber(ARGV[5]), nil)
return answer`,
  ],
  // KEYS: run, log, states, meta, lock, runs. ARGV: first, last, events (JSON), states (JSON pairs), channel, ttl (s),
  // terminal status (JSON or ""), transcript (JSON or ""), now, run id, expected last sequence ("" for any), thread key
  // prefix, appended ("1": the transcript is the run's output, to follow its input), ids (message-ids.ts: of the
  // transcript given, or "" when not known). Answers ok, dup
  // (already stored), gap (out of order, or the log is not at the expected sequence), finished (ended by another
  // instance), missing (no record). The run's instance takes it off its list once it has ended.
  cgAppend: [
    6,
    `${APPEND_LUA}
${KEEP_RUNS_LUA}
${IDS_LUA}
${HELD_BY_LUA}
local function joinArrays(a, b)
  if b == '[]' then return a end
  if a == '[]' then return b end
  return string.sub(a, 1, -2) .. ',' .. string.sub(b, 2)
end
local appended = append(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[11], ARGV[5] == '')
if appended ~= 'ok' then return appended end
for _, pair in ipairs(cjson.decode(ARGV[4])) do redis.call('HSET', KEYS[3], pair[1], pair[2]) end
for i = 1, 4 do redis.call('EXPIRE', KEYS[i], ARGV[6]) end
redis.call('EXPIRE', KEYS[6], ARGV[6])
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[1], 'status', ARGV[7], 'finishedAt', ARGV[9])
  local transcript = ARGV[8]
  local ids = ARGV[14]
  if ARGV[13] == '1' then
    -- JSON arrays joined: what the thread holds, the run's new input when its open did not write it, its output; and
    -- their ids alike (none kept when what the thread holds has none of its own: written by an earlier version).
    local held = redis.call('HGET', KEYS[4], 'transcript')
    local kept = redis.call('HMGET', KEYS[4], 'ids', 'idsOf')
    local heldIds = ''
    if not held then
      held = '[]'
      heldIds = '\0'
    elseif kept[1] and tonumber(kept[2]) == #held then
      heldIds = kept[1]
    end
    if redis.call('HGET', KEYS[1], 'extends') == '1' then
      held = joinArrays(held, redis.call('HGET', KEYS[1], 'newInput') or '[]')
      heldIds = concatIds(heldIds, redis.call('HGET', KEYS[1], 'newIds') or '')
    end
    transcript = joinArrays(held, transcript)
    ids = concatIds(heldIds, ids)
  end
  redis.call('HSET', KEYS[4], 'transcript', transcript)
  keepIds(KEYS[4], ids, #transcript)
  if heldBy(redis.call('GET', KEYS[5]), ARGV[10]) then redis.call('DEL', KEYS[5]) end
  keepRuns(KEYS[4], KEYS[6], ARGV[12], tonumber(ARGV[6]), ARGV[10])
else
  -- A run that goes on for longer than the runs' last renewal covers keeps them too.
  keepRuns(KEYS[4], KEYS[6], ARGV[12], tonumber(ARGV[6]), nil)
end
if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[3]) end
return 'ok'`,
  ],
  // cgAppend for a batch of events only (no states, status or expiry): KEYS: run, log. ARGV: first, last,
  // events (JSON), channel. The same answers.
  cgAppendEvents: [
    2,
    `${APPEND_LUA}
local appended = append(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], '', ARGV[4] == '')
if appended == 'ok' and ARGV[4] ~= '' then redis.call('PUBLISH', ARGV[4], ARGV[3]) end
return appended`,
  ],
  // cgAppendEvents for several runs at once (the keys' number is the call's first argument): KEYS: each
  // run's record and log; ARGV: each run's first, last, events, channel. Answers one answer per run, in
  // order. The keys of several threads, so of several hash slots: one Redis server or primary only (on a Redis
  // Cluster, cgAppendOnNode).
  cgAppendMany: [
    null,
    `${APPEND_LUA}
local answers = {}
for i = 1, #KEYS / 2 do
  local a = (i - 1) * 4
  answers[i] = append(KEYS[i * 2 - 1], KEYS[i * 2], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], '', ARGV[a + 4] == '')
  if answers[i] == 'ok' and ARGV[a + 4] ~= '' then redis.call('PUBLISH', ARGV[a + 4], ARGV[a + 3]) end
end
return answers`,
  ],
  // cgAppendMany on a Redis Cluster, for several runs whose slots one node serves: KEYS: the first run's record and log
  // (which route the call to that node); ARGV: each run's record, log, first, last, events, channel. The same answers,
  // in order. Keys of several slots, undeclared, which Redis 7 allows a script flagged so when they are on its node;
  // a key no longer there (its slot moved) fails the call, with the runs before it appended: each run's log then
  // writes its batch again on its own (cgAppendEvents answers dup for one already stored).
  cgAppendOnNode: [
    2,
    `#!lua flags=allow-cross-slot-keys
${APPEND_LUA}
local answers = {}
for i = 1, #ARGV / 6 do
  local a = (i - 1) * 6
  answers[i] = append(ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], '', ARGV[a + 6] == '')
  if answers[i] == 'ok' and ARGV[a + 6] ~= '' then redis.call('PUBLISH', ARGV[a + 6], ARGV[a + 5]) end
end
return answers`,
  ],
  // KEYS: meta. ARGV: rename ("1" or ""), name, archived ("1", "0" or "" for unchanged), now (ms), owner ("" for
  // none). Answers {0} when the thread has no run (gone, or never started) or belongs to another owner; once changed,
  // {1, list, lastRunAt, archived}, from which the list's sets are brought in line (cgListThread).
  cgUpdateThread: [
    1,
    `if not redis.call('HGET', KEYS[1], 'latest') then return {0, '', '', ''} end
if (redis.call('HGET', KEYS[1], 'principal') or '') ~= ARGV[5] then return {0, '', '', ''} end
if ARGV[1] == '1' then redis.call('HSET', KEYS[1], 'name', ARGV[2]) end
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'archived', ARGV[3]) end
redis.call('HSET', KEYS[1], 'updatedAt', ARGV[4])
local archived = redis.call('HGET', KEYS[1], 'archived') or ''
return {1, redis.call('HGET', KEYS[1], 'list') or '', redis.call('HGET', KEYS[1], 'lastRunAt') or ARGV[4], archived}`,
  ],
  // KEYS: meta, runs, states, lock, deleted. ARGV: thread key prefix, how long the mark stays (ms), owner ("" for
  // none). Refused ({0, ""}) when the thread belongs to another owner. Deletes every key of the thread, and leaves the
  // mark \`deleted\` naming the run that held the thread (its lock's value), so that this run, if it still writes,
  // cannot make the thread again (cgOpen answers it 'deleted'); runs claimed later are not concerned. Every run of
  // the thread is also named in the set \`deletedRuns\` for as long: a run another instance ended (its own instance
  // had lost its lease, and holds no lock) that writes again finds its record gone and would write it again from
  // nothing (a rebuild), which cgOpen refuses for these ids as well; cgClaim gives them to no new run. Answers {1 when
  // the thread had anything, the list it was in} (its entries there are removed next, in the list's slot).
  cgRemoveThread: [
    5,
    `${HELD_BY_LUA}
if (redis.call('HGET', KEYS[1], 'principal') or '') ~= ARGV[3] then return {0, ''} end
local had = redis.call('EXISTS', KEYS[1], KEYS[2])
local holder = redis.call('GET', KEYS[4])
local list = redis.call('HGET', KEYS[1], 'list') or ''
local gone = ARGV[1] .. 'deletedRuns'
for _, id in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  redis.call('DEL', ARGV[1] .. 'run:' .. id, ARGV[1] .. 'log:' .. id)
  redis.call('SADD', gone, id)
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
if holder then
  redis.call('SET', KEYS[5], holder, 'PX', ARGV[2])
  redis.call('SADD', gone, lockRun(holder) or holder)
end
if redis.call('EXISTS', gone) == 1 then redis.call('PEXPIRE', gone, ARGV[2]) end
if had > 0 then return {1, list} end
return {0, list}`,
  ],
  // The reads that must see one moment (a script runs alone): a thread as copilotThread and a restore show it, a
  // run as endRun completes it or a follower finds it ended. Read apart, a run that ends between two reads would
  // show finished with the transcript from before it, and a run written again from nothing (a rebuild) between the
  // transcript's read and its new input's could lose that input.

  // KEYS: meta, runs, states. ARGV: the thread's key prefix, "1" to read the running run's log (else ""). Answers
  // ThreadReply (reads.ts): the log is the latest run's that has a record (a run's record may have expired before its
  // id left the list), when it is running and asked for.
  cgReadThread: [
    3,
    `local runIds = redis.call('LRANGE', KEYS[2], 0, -1)
if #runIds == 0 then return {} end
local runs = {}
for i, id in ipairs(runIds) do runs[i] = redis.call('HGETALL', ARGV[1] .. 'run:' .. id) end
local log = {}
for i = #runIds, 1, -1 do
  local status = redis.call('HGET', ARGV[1] .. 'run:' .. runIds[i], 'status')
  if status then
    if status == 'running' and ARGV[2] == '1' then
      log = redis.call('XRANGE', ARGV[1] .. 'log:' .. runIds[i], '-', '+')
    end
    break
  end
end
return {redis.call('HGETALL', KEYS[1]), runIds, redis.call('HGETALL', KEYS[3]), runs, log}`,
  ],
  // KEYS: meta, run, log. ARGV: "1" to read the thread's transcript too (endRun), else "" (a follower). Answers
  // RunReply (reads.ts).
  cgReadRun: [
    3,
    `local transcript = false
if ARGV[1] == '1' then transcript = redis.call('HGET', KEYS[1], 'transcript') end
return {transcript, redis.call('HGETALL', KEYS[2]), redis.call('XRANGE', KEYS[3], '-', '+')}`,
  ],
};

/**
 * Defines the store's scripts as commands of `redis` (cgClaim, cgOpen, cgAppend, …); on a Redis Cluster (`sharded`)
 * their live channels are published with SPUBLISH.
 */
export function defineScripts(redis: Redis | Cluster, sharded: boolean): ScriptedRedis {
  for (const [name, [keys, source]] of Object.entries(SCRIPTS)) {
    const lua = sharded ? source.replaceAll("redis.call('PUBLISH'", "redis.call('SPUBLISH'") : source;
    redis.defineCommand(name, keys === null ? { lua } : { numberOfKeys: keys, lua });
  }
  return redis as ScriptedRedis;
}
