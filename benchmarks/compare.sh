#!/usr/bin/env bash
# compare.sh compares a row of an older commit (ROW, default the Mutex's,
# "uncomplicated") with the library as it is in the working tree, in one
# run of the same harness: it builds this benchmark program twice, once
# against the working tree and once against a git worktree of OLD_COMMIT
# (the replaces of a copied go.mod, given with -modfile), runs the two
# binaries alternately with -only "$ROW" -scale 0 -json and any further
# flags given, ROUNDS times each (default 3; odd rounds old first, even
# rounds new first), and prints a markdown table of the medians of both and
# new ÷ old.
#
#	bash benchmarks/compare.sh OLD_COMMIT [flags of both binaries]
#	ROW="uncomplicated Semaphore(1)" bash benchmarks/compare.sh OLD_COMMIT
#	ROW="uncomplicated rueidis" bash benchmarks/compare.sh OLD_COMMIT -workload fleet -rounds 1
#
# With -workload fleet the table has the fleet workload's measures (Redis
# CPU and commands per pair, pairs/s) instead of the contended run's.
#
# OLD_COMMIT must have the goredis module and redistest.LaunchCluster, which
# this program's go-redis and cluster rows need, though -only uncomplicated
# runs neither.
#
# Progress and each run's JSON line go to stderr, the table to stdout.
set -euo pipefail

if [[ $# -lt 1 ]]; then
	echo "usage: $0 OLD_COMMIT [flags of both binaries]" >&2
	exit 2
fi
bench=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$bench" rev-parse --show-toplevel)
old=$(git -C "$repo" rev-parse --verify "$1^{commit}")
shift
new=$(git -C "$repo" rev-parse HEAD)
new_label=${new:0:7}
new_note=""
if [[ -n $(git -C "$repo" status --porcelain) ]]; then
	new_label="${new:0:7} + working tree"
	new_note=" with the uncommitted changes of the working tree"
fi
rounds=${ROUNDS:-3}
row=${ROW:-uncomplicated}
module=github.com/uncomplicated-mutex/uncomplicated

tmp=$(mktemp -d)
cleanup() {
	git -C "$repo" worktree remove --force "$tmp/worktree" 2>/dev/null || true
	git -C "$repo" worktree prune
	rm -rf "$tmp"
}
trap cleanup EXIT

git -C "$repo" worktree add --detach --quiet "$tmp/worktree" "$old"
cp "$bench/go.mod" "$tmp/go.mod"
cp "$bench/go.sum" "$tmp/go.sum"
go mod edit -replace "$module=$tmp/worktree" "$tmp/go.mod"
# This program needs OLD_COMMIT's goredis module and redistest.LaunchCluster,
# for its go-redis and cluster rows.
goredis="$tmp/worktree/goredis"
if [[ ! -d $goredis ]] || ! grep -qs '^func LaunchCluster' "$tmp"/worktree/internal/{,testkit/}redistest/cluster.go; then
	echo "${old:0:7} has no goredis module or no redistest.LaunchCluster, which this program needs" >&2
	exit 1
fi
# The test servers moved to internal/testkit/redistest; an older commit
# gets this tree's copy there, which starts the same servers.
if [[ ! -d "$tmp/worktree/internal/testkit/redistest" ]]; then
	mkdir -p "$tmp/worktree/internal/testkit"
	cp -r "$repo/internal/testkit/redistest" "$tmp/worktree/internal/testkit/"
fi
go mod edit -replace "$module/goredis=$goredis" "$tmp/go.mod"
# and, for its fleet rows, OLD_COMMIT's rueidis module when it has one; a
# commit from before it was named uncomplicatedrueidis gets it renamed.
rueidis="$tmp/worktree/uncomplicatedrueidis"
if [[ ! -d $rueidis && -d "$tmp/worktree/rueidis" ]]; then
	cp -r "$tmp/worktree/rueidis" "$rueidis"
	(cd "$rueidis" && go mod edit -module "$module/uncomplicatedrueidis" &&
		sed -i 's/^package rueidis\(_test\)\?$/package uncomplicatedrueidis\1/' ./*.go)
fi
if [[ -d $rueidis ]]; then
	go mod edit -replace "$module/uncomplicatedrueidis=$rueidis" "$tmp/go.mod"
fi
# and its valkey-go module; a commit from before it gets this tree's, which
# its rows need to build, built against the old library.
valkey="$tmp/worktree/uncomplicatedvalkey"
if [[ ! -d $valkey ]]; then
	valkey="$repo/uncomplicatedvalkey"
fi
go mod edit -replace "$module/uncomplicatedvalkey=$valkey" "$tmp/go.mod"
echo "building against ${new_label} and ${old:0:7}" >&2
(cd "$bench" && go build -o "$tmp/bench-new" .)
# -mod=mod lets the go command add to the copies what the old library needs;
# GOWORK=off keeps the repository's go.work, which names the working tree,
# out of it. When this program does not build against the old library (its
# API changed since), the old commit's own program, whose harness differs
# only in the calls the API change made, measures the old side.
if ! (cd "$bench" && GOWORK=off go build -mod=mod -modfile "$tmp/go.mod" -o "$tmp/bench-old" . 2>"$tmp/build-old.log"); then
	echo "this program does not build against ${old:0:7} ($(tail -n 3 "$tmp/build-old.log" | tr '\n' ' ')); building ${old:0:7}'s own" >&2
	(cd "$tmp/worktree/benchmarks" && GOWORK=off go build -mod=mod -o "$tmp/bench-old" .)
fi

# run runs binary $1 once and appends its row's JSON line to $tmp/$1.jsonl.
run() {
	echo "round $2: $1" >&2
	local line
	line=$("$tmp/bench-$1" -only "$row" -scale 0 -json "${flags[@]}")
	echo "$line" >&2
	if [[ $line == *'"failed"'* ]]; then
		echo "$1: the row could not run" >&2
		exit 1
	fi
	echo "$line" >>"$tmp/$1.jsonl"
}

flags=("$@")
for ((i = 1; i <= rounds; i++)); do
	if ((i % 2)); then
		run old "$i"
		run new "$i"
	else
		run new "$i"
		run old "$i"
	fi
done

# field prints the value of key $2 of every line of $tmp/$1.jsonl, one a line.
field() {
	sed -E "s/.*\"$2\":([-0-9.eE+]+).*/\1/" "$tmp/$1.jsonl"
}

# median prints the median of the numbers on stdin (the lower middle one
# of an even count).
median() {
	sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# sum prints the sum of the numbers on stdin.
sum() {
	awk '{ s += $1 } END { print s + 0 }'
}

echo "| $row, median of $rounds runs each | old ${old:0:7} | new ${new_label} | new ÷ old |"
echo "| --- | --- | --- | --- |"
metrics=("p99 wait ms:wait_p99_ms" "hand-off p50 µs:handoff_p50_us"
	"uncontended lock+unlock p50 µs:lock_unlock_p50_us" "Redis CPU µs/acq:redis_cpu_us_per_acquisition")
# The fleet workload's lines (-workload fleet) have measures of their own.
if grep -q '"redis_cpu_us_per_pair"' "$tmp/new.jsonl"; then
	metrics=("Redis CPU µs/pair:redis_cpu_us_per_pair" "pairs/s:pairs_per_second" "Redis commands/pair:cmds_per_pair")
	# and what a row left in Redis, where the program reports it
	if grep -q '"keys_left"' "$tmp/old.jsonl"; then
		metrics+=("keys left:keys_left" "memory left, bytes:memory_left_bytes")
	fi
fi
for m in "${metrics[@]}"; do
	o=$(field old "${m#*:}" | median)
	n=$(field new "${m#*:}" | median)
	awk -v name="${m%%:*}" -v o="$o" -v n="$n" 'BEGIN {
		ratio = o > 0 ? sprintf("%.2f×", n / o) : "-"
		printf "| %s | %.2f | %.2f | %s |\n", name, o, n, ratio
	}'
done
echo
echo "old: $old; new: $new$new_note."
overlaps=""
if [[ ${metrics[0]} != *pair* ]]; then
	overlaps="; overlaps old $(field old overlaps | sum), new $(field new overlaps | sum)"
fi
echo "Flags: -only \"$row\" -scale 0 -json${flags[*]:+ ${flags[*]}}; errors old $(field old errors | sum), new $(field new errors | sum)$overlaps."
