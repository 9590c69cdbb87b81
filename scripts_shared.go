package uncomplicated

import "github.com/uncomplicated-mutex/uncomplicated/driver"

// The Lua that the locks' scripts share.
//
// A lease argument is in milliseconds, "0" meaning no expiry. Times in
// sorted-set scores are milliseconds of Redis's own clock (TIME), so that
// the clocks of the Clients never matter.
//
// Fences. A fence is Redis's own clock in microseconds when it is granted,
// or one above the fences the lock's holders have, or the script granted
// before, if the clock is not past them: so it is unique and rises with
// every grant of the lock as long as Redis's clock does not go back, even
// when Redis has lost the lock's keys. The holder of a Mutex, or of an
// RWMutex as its writer, is stored as "<token> <fence>" (see fenced and
// cutFence), so that its fence lives and dies with it; a Semaphore keeps
// the fence of each holder beside it, and the highest in a counter that
// lives as long as its holders.
//
// The holders of an RWMutex (its readers) and of a Semaphore are members
// of a sorted set whose score is when their lease ends, or +inf without a
// lease; the scripts drop the members whose lease has ended, so that a
// holder that died frees its share by itself and no count can go wrong.
// Such a set, and what a Semaphore keeps beside it, expires when its
// latest member's lease or expiry ends (see expireWith).
//
// Every lock has a queue of waiters: a list of their tokens, oldest first.
// Beside it, each queued waiter has a key of its own, the queue's name and
// ":<token>" (so it shares the lock's hash tag), holding its entry
// "<kind> <claim> <expiry> <attempt> <channel>" (see queueEntry), where
// kind is "x" for a waiter of the lock itself (a Mutex's, an RWMutex's
// writer), "s" for an RWMutex's reader and, for a Semaphore, its number
// of permits, and attempt numbers the attempt that wrote it. The key lives
// for the waiter's expiry (a few ticks), which each of its attempts
// restarts: a waiter that died soon stops counting, without a clock read.
// The queue outlives each of them, by one expiry at most. A waiter joins the
// queue once its Client listens on channel. A release hands the lock to
// the oldest waiter whose key is still there: it makes that waiter a
// holder for its claim (a short lease, which the waiter restarts as its
// whole lease: see claim.go), under a new fence, and publishes "<token>
// <fence> <attempt>" on its channel (see parseWakeUp), with SPUBLISH
// (sharded pub/sub), which on Redis Cluster reaches the subscribers of the
// lock's slot. It offers the lock only to a waiter whose Client listens on
// this very node (PUBSUB SHARDNUMSUB): a waiter whose Client lost its
// connection is passed over, and so is one subscribed on a replica, which
// hears what the master publishes and would take a message for a grant. A
// server without sharded pub/sub (miniredis) gets PUBSUB NUMSUB and
// PUBLISH, and its Clients SUBSCRIBE.
//
// A key that no script writes any more, such as the fence counter of a
// Mutex or an RWMutex that earlier versions kept, is deleted when the
// lock is next freed.

// leaseLua stores a holder's value with its lease.
const leaseLua = `
local function setLease(key, value, lease)
  if lease == '0' then
    redis.call('SET', key, value)
  else
    redis.call('SET', key, value, 'PX', lease)
  end
end
`

// clockLua reads Redis's clock, in microseconds, once per script.
const clockLua = `
local clockUs
local function clock()
  if not clockUs then
    local t = redis.call('TIME')
    clockUs = t[1] * 1000000 + t[2]
  end
  return clockUs
end
`

// fencedLua makes a holder's value, "<token> <fence>" (see cutFence).
const fencedLua = `
local function fenced(token, fence)
  return token .. ' ' .. string.format('%d', fence)
end
`

// holdsLua tells whether a holder's value, "<token>" or "<token>
// <fence>", is token's: a release compares the hold's own values whole
// (see hold.inKey); a waiter that leaves, or a release of an orphan, has
// the token alone.
const holdsLua = `
local function holds(value, token)
  return value == token or string.byte(value, #token + 1) == 32 and string.find(value, token, 1, true) == 1
end
`

// newFenceLua makes fences (see above); it needs clockLua. newFence
// returns a new fence, above above if not nil. A script whose first grant
// is its only one may take Redis's clock for its fence.
const newFenceLua = `
local lastFence = 0
local function newFence(above)
  local f = clock()
  if above and above >= f then
    f = above + 1
  end
  if lastFence >= f then
    f = lastFence + 1
  end
  lastFence = f
  return f
end
`

// fenceOfLua reads fences: fenceNumber a fence, fenceOf the fence in a
// holder's value; nil when there is none, or it is not an integer below
// 2^53, which Lua's numbers hold exactly.
const fenceOfLua = `
local function fenceNumber(s)
  local f = string.match(s, '^%d+$') and tonumber(s)
  if f and f < 9007199254740992 then
    return f
  end
end
local function fenceOf(value)
  return fenceNumber(string.match(value or '', ' (%d+)$') or '')
end
`

// timeLua is what the scripts on holder sets share; it needs clockLua.
// now is Redis's clock in milliseconds; live tells whether member's lease
// in set has not ended: a score of +inf reads "inf", which miniredis's Lua
// cannot turn into a number.
// expireWith makes set, and the keys kept beside it, expire when its
// latest score does (never for +inf), and deletes those keys when set is
// empty; every script that adds to a set, or takes from it, calls it.
const timeLua = `
local function now()
  return math.floor(clock() / 1000)
end
local function ms(n)
  return string.format('%d', n)
end
local function expiry(t, lease)
  if lease == '0' then
    return '+inf'
  end
  return ms(t + tonumber(lease))
end
local function live(set, member, t)
  local s = redis.call('ZSCORE', set, member)
  return s and (s == 'inf' or tonumber(s) > t)
end
local function prune(set, fences, t)
  if not fences then
    redis.call('ZREMRANGEBYSCORE', set, '-inf', ms(t))
    return
  end
  while true do
    local gone = redis.call('ZRANGEBYSCORE', set, '-inf', ms(t), 'LIMIT', 0, 100)
    if #gone == 0 then
      return
    end
    for _, m in ipairs(gone) do
      redis.call('ZREM', set, m)
      if fences then
        redis.call('HDEL', fences, m)
      end
    end
  end
end
local function expireWith(set, ...)
  local top = redis.call('ZRANGE', set, -1, -1, 'WITHSCORES')
  local beside = {...}
  if #top == 0 then
    if #beside > 0 then
      redis.call('DEL', unpack(beside))
    end
    return
  end
  table.insert(beside, 1, set)
  for _, key in ipairs(beside) do
    if top[2] == 'inf' then
      redis.call('PERSIST', key)
    else
      redis.call('PEXPIREAT', key, ms(tonumber(top[2])))
    end
  end
end
`

// The queue of waiters, for the acquiring and releasing scripts (see the
// queue's Lua below). An acquiring script's ARGV are, first, the waiter's token, its
// lease, its entry (see queueEntry), what to do with the entry (op), and
// its expiry in ms, "0" for an attempt that does not wait (TryLock); a
// Mutex's attempt with no op passes the first two only (see
// attemptArgs.argv).
//
// op: join the queue once the subscription is confirmed ("q"), rejoin if
// a release passed the waiter over ("r": its key is gone), or stay queued
// without rejoining ("x": in the queue but not listening), or nothing
// (""). A blocked attempt restarts the waiter's key, writing its entry,
// whose attempt number tells the waiter whether a hand-off came after it
// (see waiter.handedOver); a successful one takes the waiter out of the
// queue.
//
// A release takes ARGV[1], then the tokens of the hold. ARGV[1] is "" for
// a holder's release; a waiter that gives up passes "q" if it is in the
// queue, else "-", so that it leaves the queue and stops counting as
// waiting (a waiting writer holds readers back), and releases what a
// hand-off may have just given it.
// attemptArgs are the ARGV of an acquiring script, as queueWaitLua reads them:
// the five of an attempt (two only for a Mutex's attempt with no op; see
// argv), then the primitive's own, which say what a take-over evicts (see
// the scripts of each primitive).
type attemptArgs struct {
	token  string
	lease  int64  // ms; 0: none
	entry  string // the waiter's queue entry; "" before it may queue
	op     string // what to do with the entry: "q", "r", "x" or ""
	expiry int64  // the entry's, in ms; 0: the attempt does not wait
	form   argForm
	// stale are the stale blockers to take over from; nil for an attempt
	// that takes over nothing.
	stale   []string
	permits int // a Semaphore's
}

// An argForm is the form of a primitive's own ARGV.
type argForm int

const (
	mutexArgs  argForm = iota // a Mutex's: the stale holder's token, for a take-over
	writerArgs                // an RWMutex's writer: "x" for a take-over, the stale writer, the stale readers
	readerArgs                // an RWMutex's reader: the stale writer
	permitArgs                // a Semaphore's: its permits, the stale holder
)

// argv returns a's ARGV, in the order the scripts read them. A Mutex's
// attempt with no op and no take-over (TryLock's, the first of a Lock and
// those before its waiter may queue) gets its token and lease only: Redis
// copies every argument into Lua, and the scripts read the others only for
// an op or a take-over.
func (a attemptArgs) argv() []any {
	if a.form == mutexArgs && a.op == "" && a.stale == nil {
		return []any{a.token, a.lease}
	}
	args := []any{a.token, a.lease, a.entry, a.op, a.expiry}
	var first string // the first stale blocker, a writer's token without its mark
	if a.stale != nil {
		first, _ = cutWriter(a.stale[0])
	}
	switch a.form {
	case mutexArgs:
		if a.stale != nil {
			args = append(args, first)
		}
	case writerArgs:
		if a.stale == nil {
			return append(args, "", "")
		}
		writer, readers := "", []any(nil)
		for _, s := range a.stale {
			if w, ok := cutWriter(s); ok {
				writer = w
			} else {
				readers = append(readers, s)
			}
		}
		args = append(append(args, "x", writer), readers...)
	case readerArgs:
		args = append(args, first)
	case permitArgs:
		stale := ""
		if a.stale != nil {
			stale = a.stale[0]
		}
		args = append(args, a.permits, stale)
	}
	return args
}

// The queue's Lua, in pieces, so that a script defines only the
// functions it may call: queueKeepLua makes a queue outlive each entry
// written (expiry ms): when less than the expiry is left, it gives the
// queue twice that, so that a busy queue costs a write only once per
// expiry; queueWaitLua is an acquiring script's (wait, joined),
// queueLeaveLua a waiter's leave, queueHandLua a hand-off's (nextWaiter,
// putBack, offer). The first is needed by the second and the last.
const queueKeepLua = `
local function keepQueue(queue, expiry)
  if redis.call('PTTL', queue) < tonumber(expiry) then
    redis.call('PEXPIRE', queue, 2 * expiry)
  end
end
`

const queueWaitLua = `
local function wait(queue)
  local op = ARGV[4] or ''
  if op == '' or ARGV[5] == '0' then
    return
  end
  local key = queue .. ':' .. ARGV[1]
  if op ~= 'q' and (redis.call('SET', key, ARGV[3], 'PX', ARGV[5], 'XX') or op == 'x') then
    keepQueue(queue, ARGV[5])
    return
  end
  redis.call('RPUSH', queue, ARGV[1])
  redis.call('SET', key, ARGV[3], 'PX', ARGV[5])
  keepQueue(queue, ARGV[5])
end
local function joined(queue)
  if ARGV[4] == 'r' or ARGV[4] == 'x' then
    redis.call('LREM', queue, 0, ARGV[1])
    redis.call('DEL', queue .. ':' .. ARGV[1])
  end
end
`

const queueLeaveLua = `
local function leave(queue)
  if ARGV[1] == 'q' then
    redis.call('LREM', queue, 0, ARGV[2])
    redis.call('DEL', queue .. ':' .. ARGV[2])
  end
end
`

const queueHandLua = `
local function putBack(queue, w)
  redis.call('LPUSH', queue, w.token)
  redis.call('SET', queue .. ':' .. w.token, w.entry, 'PX', w.expiry)
  keepQueue(queue, w.expiry)
end
local function nextWaiter(queue, fits, first)
  while true do
    local token = first or redis.call('LPOP', queue)
    first = nil
    if not token then
      return nil
    end
    local entry = redis.call('GETDEL', queue .. ':' .. token)
    if entry then
      local kind, claim, expiry, attempt, channel = string.match(entry, '^(%S+) (%d+) (%d+) (%d+) (.+)$')
      if kind then
        local w = {token = token, kind = kind, claim = claim, expiry = expiry, attempt = attempt, channel = channel, entry = entry}
        if fits and not fits(w) then
          putBack(queue, w)
          return nil
        end
        return w
      end
    end
  end
end
local function offer(w, fence)
  local publish = 'SPUBLISH'
  local ok, subs = pcall(redis.call, 'PUBSUB', 'SHARDNUMSUB', w.channel)
  if not ok then
    publish, subs = 'PUBLISH', redis.call('PUBSUB', 'NUMSUB', w.channel)
  end
  if subs[2] == 0 then
    return false
  end
  redis.call(publish, w.channel, w.token .. ' ' .. string.format('%d', fence) .. ' ' .. w.attempt)
  return true
end
`

// heldScript replies 1 if one of the tokens ARGV[1..] is in the holder set
// KEYS[1] with a lease that has not ended, else 0.
var heldScript = driver.NewScript(1, clockLua+timeLua+`
local t = now()
for i = 1, #ARGV do
  if live(KEYS[1], ARGV[i], t) then
    return 1
  end
end
return 0
`)

// anys converts tokens to script arguments.
func anys(tokens []string) []any {
	args := make([]any, len(tokens))
	for i, t := range tokens {
		args[i] = t
	}
	return args
}
