package ulockcli

import (
	"context"
	"fmt"
)

// ulock help: the documentation of every command, flag, exit code and
// output format.

// help is ulock help: the overview, or the help of one command.
func (s *session) help(_ context.Context, args []string) int {
	switch len(args) {
	case 0:
		fmt.Fprint(s.stdout, overview)
		return exitOK
	case 1:
		if _, ok := helpTopics[args[0]]; ok {
			return s.helpOf(args[0])
		}
		return s.usage(fmt.Sprintf("no help on %q; ulock's commands are run, acquire, refresh, elect, status, list, release, demo and help", args[0]))
	}
	return s.usage("help takes one COMMAND at most")
}

// helpOf prints the help of topic, a command, to stdout.
func (s *session) helpOf(topic string) int {
	fmt.Fprint(s.stdout, helpTopics[topic])
	return exitOK
}

const overview = `ulock: locks in Redis for a fleet, from the command line (package uncomplicated)

usage:
  ulock run [flags] NAME -- COMMAND [ARG...]      run COMMAND while holding lock NAME
  ulock acquire [flags] NAME                      lock NAME, print its handle, leave it held
  ulock refresh --handle H                        restart the lease of the hold H names
  ulock elect [flags] NAME -- COMMAND [ARG...]    run COMMAND while leading election NAME
  ulock status [--json] [flags] NAME...           what each lock is and who holds it
  ulock list [--json] [--match GLOB] [--limit N]  every lock under the prefix
  ulock release --force [flags] NAME              break a stuck lock
  ulock release --handle H                        release the hold H names, and no other
  ulock demo [flags]                              workers share orders' locks; one hangs
  ulock help [COMMAND]                            this, or all about COMMAND

Flags of every command but demo and help; they may come before or after NAME:
  --redis URL    the Redis: redis://[[user]:password@]host[:port][/db], or
                 rediss:// for TLS; host:port alone means redis://host:port.
                 Default: $REDIS_URL, else
                 redis://localhost:6379/0. The go-redis build of ulock also
                 speaks redis+cluster:// (Redis Cluster; more nodes as
                 ?addr=host:port&addr=...) and redis+sentinel:// (the
                 sentinels' address, ?master_name=NAME required, and the
                 master's credentials as ?username=&password=), each with
                 a rediss+ twin. In the repository, run it with
                   cd goredis && go run ./cmd/ulock
                 and once the modules are tagged, install it with
                   go install github.com/uncomplicated-mutex/uncomplicated/goredis/cmd/ulock@latest
  --prefix P     the first part of every lock name (default "lock"), as
                 uncomplicated.WithPrefix sets it

NAME is not the same for every command:
  run      NAME is always a plain name, as Named takes it: ulock
           escapes it (every byte but letters, digits, - _ and . becomes
           % and two hex digits) and puts the prefix and a colon before it. "nightly-report" is
           the lock lock:nightly-report, and "lock:x" is lock:lock%3Ax,
           not lock:x; so run cannot lock an object's lock. Its messages
           and ULOCK_NAME give the full name.
  elect    NAME is the election's name, as Client.Election takes it; its
           lock is lock:election:NAME, NAME escaped.
  status,  NAME is a full name when it begins with the prefix and a colon,
  release  as list prints it and as run's messages show it (so
           lock:orders.Order:42 addresses the lock of an object);
           election:NAME is the lock of the election NAME; and
           otherwise NAME is a plain name, as for run.

Redis calls: each call to Redis (a connection, then one command or script)
gives up after 10 s without an answer, and ulock exits 1. status, list and
release have no time limit as a whole: list makes a SCAN call per 1000 keys
and a call per lock, each with its own 10 s. SIGINT (Ctrl-C), SIGTERM or
SIGHUP stops them, with one line on stderr, and exit 128+N; for run, see
'ulock help run'.

Exit codes:
  0      success; for run, COMMAND exited 0
  1      a runtime failure: Redis unreachable or failing, or a call to
         Redis unanswered for 10 s
  2      a mistake in the command line: an unknown command or flag, a bad
         value, a missing NAME or COMMAND; release without --force
  75     run, elect, acquire: the lock was not obtained: busy when --wait ended (or
         at once with --wait 0), or stale under --policy fail
         (--conflict-exit-code)
  76     run, elect: the lock was lost while COMMAND ran (--lost-exit-code);
         refresh, release --handle: the handle's hold has ended
  126    run, elect: COMMAND could not be executed
  127    run, elect: COMMAND was not found
  128+N  ulock got signal N: run while it waited, or status, list or
         release before they were done; or run's COMMAND was killed by
         signal N (130 for SIGINT, 143 for SIGTERM)
  other  run, elect: COMMAND's own exit status
Errors are one line on stderr.

Run 'ulock help COMMAND' for a command's flags and output.
`

// helpTopics are the helps of the commands, by name.
var helpTopics = map[string]string{
	"run": `usage: ulock run [flags] NAME -- COMMAND [ARG...]

Waits for the lock NAME, then runs COMMAND while holding it, and releases it
when COMMAND exits: flock(1) for a fleet of machines that share one Redis.
Everything after -- is COMMAND; flags may come before or after NAME.

COMMAND inherits ulock's stdin, stdout and stderr, and its environment with:
  ULOCK_NAME   the lock's full name: lock:NAME, with NAME escaped (see
               'ulock help')
  ULOCK_FENCE  the hold's fence: higher than every earlier hold's (Redis's
               clock in microseconds at the grant, or just above). Pass it to
               the store COMMAND writes to, and have the store refuse a write
               whose fence is below the highest it has seen. Unset for
               --kind rwmutex-read: read locks have no fence.
  ULOCK_HANDLE the hold's handle, for COMMAND to hand the hold on (see
               'ulock help acquire'); a secret. Unset for rwmutex-read and
               semaphore:N.

Flags (a duration D as Go writes it: 300ms, 30s, 5m, 1h30m):
  --kind K        mutex (default); rwmutex-write or rwmutex-read, one writer or
                  many readers of an RWMutex; semaphore:N, one of at most N
                  holders of a Semaphore
  --wait D        give up waiting after D (such as 30s) and exit 75; --wait 0
                  makes one attempt, as flock -n. Default: wait as long as it
                  takes
  --timeout D     patience (default 5m0s): a holder is stuck once it has
                  kept one token (not renewed its hold) for its own
                  --timeout, or the waiter's if that is longer. ulock
                  renews its hold at least every third of D, so that
                  waiters, whatever their --timeout, find it busy while it
                  runs
  --policy P      what to do about a stuck holder: fail (default), exit 75;
                  or takeover, replace it under a higher fence
  --lease D       how long the hold lasts in Redis unless renewed (default
                  twice --timeout; 0: never expires). While COMMAND runs,
                  ulock renews it every third of D or of --timeout,
                  whichever is shorter, and at least every 5 s; a renewal
                  is also when ulock finds the lock lost
  --ticks N       a waiter tries again after a random time below
                  min(timeout/N, 1s) (default 100)
  --label S       who holds it, as status shows (default host:pid)
  --grace D       when the lock is lost, COMMAND gets SIGTERM, and SIGKILL D
                  later if it still runs (default 10s)
  --conflict-exit-code N  exit code when the lock was not obtained (default 75)
  --lost-exit-code N      exit code when it was lost meanwhile (default 76)
  --redis URL, --prefix P  see 'ulock help'

Signals: SIGINT, SIGTERM and SIGHUP to ulock go on to COMMAND; ulock releases
the lock once COMMAND exits. While ulock still waits, such a signal ends the
wait, and ulock exits 128+N.

Process group: when ulock's stdin is not a terminal (a pipe, a file or
/dev/null, as under cron, systemd or CI), COMMAND runs in a process group of
its own, and the signals ulock passes on, and the SIGTERM and SIGKILL of a
lost lock, go to the whole group: to the processes COMMAND started too.
After a loss ulock exits once the whole group has exited, or at the
SIGKILL. When stdin is a terminal (and on systems other than Linux, always)
COMMAND stays in ulock's process group, so that it can read the terminal,
and only COMMAND gets them; Ctrl-C at the terminal reaches the whole
foreground group directly.

If ulock itself dies (kill -9), Linux sends COMMAND SIGTERM, as ulock then
no longer holds the lock (Pdeathsig). It reaches COMMAND alone, not the
processes COMMAND started, nor its group. Elsewhere than on Linux, COMMAND
goes on running.

Exit status: COMMAND's, or 128+N when a signal N killed it, 127 when it was
not found, 126 when it could not be executed. 75 (--conflict-exit-code):
the lock was not obtained, with one line on stderr, "busy: NAME held by
LABEL for D" or "stale: ...". 76 (--lost-exit-code): the lock was lost
while COMMAND ran (its lease ran out with Redis unreachable, or someone
broke or took it over, which ulock finds at its next renewal, within 5 s);
COMMAND got SIGTERM then. With --lease 0 a loss is known only when COMMAND
exits. Each message names the lock by its full name. 1: Redis failed; 2: a
usage mistake.

Examples:
  ulock run nightly-report -- ./report.sh --since yesterday
  ulock run --wait 0 backup -- pg_dump -f /backups/db.sql app    # skip if running
  ulock run --kind semaphore:3 --wait 10m exports -- ./export.sh  # 3 at a time
`,

	"elect": `usage: ulock elect [flags] NAME -- COMMAND [ARG...]

Campaigns in the election NAME, then runs COMMAND while this process leads,
and resigns when COMMAND exits, which elects the next campaigner at once:
one scheduler, or one consumer of a partition, for a fleet. With --again it
campaigns anew whenever COMMAND exits, until ulock gets a signal; so every
machine can run "ulock elect --again scheduler -- ./scheduler" and one at a
time runs it. Everything after -- is COMMAND; flags may come before or after
NAME.

The leader announces its --label (default host:pid), which 'ulock status
election:NAME' shows as the holder of the election's lock (KIND election).
A leader killed or frozen leaves its lease to end, within 15s by default,
and the next campaigner takes over at its next tick; one stuck for --timeout
(renewing with one token) is taken over unless --policy fail. COMMAND gets ULOCK_NAME (the election's lock,
lock:election:NAME) and ULOCK_FENCE (the leader's fence, higher than every
earlier leader's).

Flags: those of run (see 'ulock help run'), but --kind, and with these
differences:
  --policy P      takeover (default) or fail
  --wait D        give up campaigning after D and exit 75; 0 is refused.
                  Default: campaign as long as it takes
  --lease D       default 15s, or twice --timeout if shorter; must not be 0:
                  an election needs a lease, so that a dead leader makes way
  --again         campaign again whenever COMMAND exits (default: once)

Signals, process group, exit status: as for run; with --again, the status
of the last COMMAND, or of the last campaign that ended without leading,
or 128 + the number of a signal that came between two runs of COMMAND.

Examples:
  ulock elect --again scheduler -- ./scheduler --queue default
  ulock elect --timeout 30s --label "$(hostname)" partition-7 -- ./consume 7
`,

	"status": `usage: ulock status [--json] [flags] NAME...

Shows what Redis has of each lock NAME: its kind, whether it is held, by whom,
for how long, the lease left, the holder's timeout, its fence, the waiters,
and the readers or permits in use. It costs Redis one script per lock. A lock
that nobody holds is shown free, with fence 0, and with kind "" (- in the
table) when Redis has nothing of it.

Flags:
  --json          one JSON object per lock and line (JSON Lines), as below
                  (default: the table)
  --redis URL, --prefix P  see 'ulock help'

Table columns:
  NAME        the full name
  KIND        mutex, rwmutex, semaphore, election (its holder is the leader,
              and HOLDER the value it announced); - when Redis has nothing
              of it
  STATE       free or held
  HOLDER      the first holder's label, and "+N" more holders
  HELD FOR    how long the first holder has held it; ? when unknown
  LEASE LEFT  the first holder's lease left; none when it has no lease
  TIMEOUT     the first holder's --timeout (WithTimeout), by which waiters
              judge it stuck (see 'ulock help run'); - when unknown (a
              holder of an older version)
  FENCE       the highest fence of the holders, which the next holder's
              exceeds; 0 when free or held by readers alone
  WAITERS     waiters queued, and for an RWMutex how many are writers
  IN USE      RWMutex: writer, or N readers; Semaphore: N of PERMITS (PERMITS
              only when a waiter tells it); Mutex: -

JSON fields (every field is always present):
  name                 string   the full name
  kind                 string   "mutex", "rwmutex", "semaphore",
                                "election", or ""
  state                string   "free" or "held"
  fence                number   as FENCE above
  holders              array    the holders, the oldest first, up to 100:
    role               string   "holder" (Mutex), "writer" or "reader"
                                (RWMutex), "permit" (Semaphore)
    label              string   its --label or WithHolderLabel; "" for none
    since              string   when it began, RFC 3339 by its own clock; null
                                when unknown
    held_for_seconds   number   from since to at; null when since is
    lease_left_seconds number   the lease left at at; null: no lease
    timeout_seconds    number   its --timeout (WithTimeout); null when
                                unknown (a holder of an older version)
    fence              number   its fence; 0 for a reader
  waiters              array    the queued waiters, the oldest first, up to 100:
    role, label, since          as for holders
    waited_seconds     number   from since to at; null when since is null
    timeout_seconds    number   as for holders
  waiting_writers      number   RWMutex: writers waiting; 0 otherwise
  permits              number   Semaphore: its permits, as its waiters tell
                                them; null when unknown or not a Semaphore
  at                   string   when Redis read the lock, by Redis's clock

Times to the millisecond; durations in seconds, to the millisecond.
`,

	"list": `usage: ulock list [--json] [--match GLOB] [--limit N] [flags]

Shows every lock under the prefix, as 'ulock status' shows a lock (see
'ulock help status' for the table and the JSON fields). A lock counts while
Redis has anything of it: while it is held or waited for, and a few seconds
after a waiter died. It costs Redis a SCAN of the whole keyspace, 1000 keys per
call (of every master of a Cluster), never KEYS, and a script per lock: each
call has 10 s, the listing as a whole no time limit (see 'ulock help').

Flags:
  --match GLOB    only the locks whose full names match GLOB (* ? [a-z], as
                  Go's path.Match); the prefix and a colon go in front of a
                  GLOB without them: --match 'orders.Order:*' (default:
                  every lock)
  --limit N       at most N locks (default 1000); when more match, a line on
                  stderr says so
  --json          JSON Lines, as status --json (default: the table)
  --redis URL, --prefix P  see 'ulock help'
`,

	"release": `usage: ulock release --force [flags] NAME
       ulock release --handle H

Breaks the lock NAME: removes its holders (the holder, the writer or the
readers, or the permits) and hands it to its waiters as a release would,
under a new fence. Prints what it removed (roles, labels, fences), or that
the lock was free. Exit 0 in both cases.

Breaking a lock is for a holder that is surely gone or stuck: a holder that
is only slow goes on running beside the next holder until it next renews
its lease and finds the lock lost ('ulock run' renews at least every 5 s,
and then sends COMMAND SIGTERM and exits 76). Fences let a store refuse its
late writes. Without --force, release refuses, changes nothing and exits 2.
Stopped by a signal (Ctrl-C) while it talks to Redis, release exits 128+N,
and the lock may or may not be broken: see 'ulock status NAME'.

With --handle H (or $ULOCK_HANDLE), a handle that ulock acquire printed,
release releases that hold and no other, as its holder would, and exits 0;
76 when the hold has ended.

Flags:
  --force         break the lock (default: off, and release refuses)
  --handle H      release the hold H names (default: $ULOCK_HANDLE)
  --redis URL, --prefix P  see 'ulock help'
`,

	"acquire": `usage: ulock acquire [flags] NAME

Waits for the lock NAME (a plain name, as for run), takes its whole lease,
prints its handle on stdout, one line, and exits 0 leaving the lock held,
for a later step or another process to refresh or release it:

  H=$(ulock acquire --wait 30s nightly-report) || exit
  ./report.sh
  ulock release --handle "$H"

A handle is a capability: whoever has it can release the lock. Keep it as
a secret; ulock status and list never show one. If nothing releases the
lock, it ends with its lease. Exit 75 when the lock was not obtained.

Flags:
  --wait D        wait at most D (0: one attempt; default: until obtained)
  --lease D       the hold's lease, which refresh restarts (default 10m0s)
  --redis URL, --prefix P  see 'ulock help'
`,

	"refresh": `usage: ulock refresh --handle H

Restarts the lease of the hold that H, a handle that ulock acquire printed
(or $ULOCK_HANDLE), names. H stays good. Exit 76 when the hold has ended:
expired, released or taken over.

Flags:
  --handle H      the handle (default: $ULOCK_HANDLE)
  --redis URL     see 'ulock help'
`,

	"demo": `usage: ulock demo [flags]

Workers share a few orders' locks; one hangs while holding a lock and is
found stale by the others, who take it over (or, with -policy fail, give
up); a fenced store refuses the hung worker's late write. Without REDIS_URL
it runs on an embedded in-memory Redis; with REDIS_URL it uses that server
and deletes its keys (ulock-demo:*) afterwards.

Flags:
  -policy P       takeover (default) or fail
  -workers N      number of workers (default 4)
  -orders N       number of orders they share (default 3)
  -jobs N         jobs per worker (default 4)
  -timeout D      patience (default 1.5s)
  -lease D        the locks' lease (default 10s)
  -work D         mean time a job holds its lock (default 200ms)
  -seed N         seed of the workers' job times (default 1)
`,

	"help": `usage: ulock help [COMMAND]

Shows the commands, the common flags and the exit codes, or all about
COMMAND: run, acquire, refresh, elect, status, list, release, demo. 'ulock COMMAND --help' does too.
`,
}
