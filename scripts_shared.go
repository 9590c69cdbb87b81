package uncomplicated

import "fmt"

// The Lua of the RWMutex and the Semaphore. Their holders are members of a
// sorted set whose score is when the holder's lease ends, in milliseconds
// of Redis's own clock (TIME), or +inf without a lease; every script first
// drops the members whose lease has ended, so that a holder that died
// frees its share by itself and no count can go wrong. A release publishes
// wakeAll on the lock's channel (ARGV[1] of a release), which wakes every
// waiter of the lock to try again.

// holdersLua is what the scripts on holder sets share.
const holdersLua = `
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
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
local function prune(set, fences, t)
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
`

// heldScript replies 1 if one of the tokens ARGV[1..] is in the holder set
// KEYS[1] with a lease that has not ended, else 0. A score of +inf reads
// "inf", which miniredis's Lua cannot turn into a number.
var heldScript = newScript(1, holdersLua+`
local t = now()
for i = 1, #ARGV do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and (s == 'inf' or tonumber(s) > t) then
    return 1
  end
end
return 0
`)

// grant is the reply of an acquiring script of an RWMutex or a Semaphore:
// {1, fence} when it acquired, else {0, 0, writer, holders}, the tokens of
// what blocks the caller.
type grant struct {
	ok      bool
	fence   uint64   // the fence of the hold; 0 for a reader
	writer  string   // the RWMutex's writer, if it blocks the caller
	holders []string // the readers or permit holders that block the caller
}

// blockers lists what blocks the caller, the writer first.
func (g grant) blockers() []string {
	if g.writer == "" {
		return g.holders
	}
	return append([]string{writerMark + g.writer}, g.holders...)
}

// writerMark tells a writer's token from readers' among blockers.
const writerMark = "w:"

func parseGrant(reply any) (grant, error) {
	r, ok := reply.([]any)
	if !ok || len(r) < 2 {
		return grant{}, fmt.Errorf("%w: %T", ErrUnexpectedReply, reply)
	}
	f, fok := r[1].(int64)
	switch {
	case r[0] == int64(1) && fok && f >= 0:
		return grant{ok: true, fence: uint64(f)}, nil
	case r[0] == int64(0) && len(r) == 4:
		w, wok := r[2].([]byte)
		hs, hok := r[3].([]any)
		if !wok || !hok {
			break
		}
		g := grant{writer: string(w), holders: make([]string, 0, len(hs))}
		for _, h := range hs {
			b, ok := h.([]byte)
			if !ok {
				return grant{}, fmt.Errorf("%w: a holder of %T", ErrUnexpectedReply, h)
			}
			g.holders = append(g.holders, string(b))
		}
		return g, nil
	}
	return grant{}, fmt.Errorf("%w: a reply of %d elements", ErrUnexpectedReply, len(r))
}
