#!/usr/bin/env bash
# compare_commands.sh — runs every `heaplens` command with its main options (text and --json),
# and bad arguments, with two builds of heaplens on copies of the same recordings, and diffs
# stdout, stderr, exit status and the files written. For changes that must not change behaviour
# (a refactoring): the reference is the old build, e.g. main's.
#
# Usage: tests/compare_commands.sh OLD_HEAPLENS NEW_HEAPLENS RECORDING.db...
#   Each recording gets the same runs; the first two are also compared across files (diff
#   --to-file). Each build works on its own copies (retention, roots, leaks and report store
#   retained sizes into the file, inspect and report inspections), in directories of the same name, so paths in messages agree.
#   Prints one line per difference and a summary; exits 1 when anything differs.
# Not a ctest test: it needs two builds. Recordings: `heaplens record -o x.db -- dotnet
# examples/...` (AllocPatterns, LeakDemo, AllocSites, --mode sampled).
set -u
if [ $# -lt 3 ]; then
  echo "usage: $0 OLD_HEAPLENS NEW_HEAPLENS RECORDING.db..." >&2
  exit 2
fi
old=$(realpath "$1") new=$(realpath "$2")
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs=0 diffs=0

# setup SIDE: a directory $work/SIDE/w holding r0.db, r1.db, ... and a few bad files.
setup() {
  local dir=$work/$1/w i=0
  mkdir -p "$dir"
  for db in "${dbs[@]}"; do cp "$db" "$dir/r$i.db"; i=$((i + 1)); done
  echo "not a database" >"$dir/text.db"
  : >"$dir/empty.db"
  sqlite3 "$dir/other.db" "CREATE TABLE t (x)"
}

# run NAME ARGS...: runs both builds with ARGS in their directories and compares.
run() {
  local name=$1
  shift
  runs=$((runs + 1))
  for side in old new; do
    local exe=$old
    [ $side = new ] && exe=$new
    (cd "$work/$side/w" && "$exe" "$@" >"../out" 2>"../err" </dev/null; echo $? >"../status")
  done
  local what
  for what in out err status; do
    if ! cmp -s "$work/old/$what" "$work/new/$what"; then
      diffs=$((diffs + 1))
      echo "DIFF [$name] $what: heaplens $*"
      diff "$work/old/$what" "$work/new/$what" | head -8 | sed 's/^/    /'
    fi
  done
}

# file NAME PATH: compares a file both builds wrote (relative to their directories).
file() {
  runs=$((runs + 1))
  if ! cmp -s "$work/old/w/$2" "$work/new/w/$2"; then
    diffs=$((diffs + 1))
    echo "DIFF [$1] file $2"
  fi
}

dbs=("$@")
setup old
setup new

# ---- the command line ----
run usage
run help --help
run help-h -h
run help-word help
run version --version
run unknown bogus
for c in record attach snapshot snapshots info gcs allocations survivors retention roots leaks \
    diff stacks inspect report; do
  run "$c-help" "$c" --help
  run "$c-none" "$c"
  run "$c-badopt" "$c" r0.db --no-such-option
done

# ---- bad files (every command that reads one) ----
for c in snapshots info gcs allocations survivors retention leaks diff stacks inspect report; do
  run "$c-missing" "$c" missing.db
  run "$c-text" "$c" text.db
  run "$c-empty" "$c" empty.db
  run "$c-other" "$c" other.db
  run "$c-two" "$c" r0.db r0.db
done
run roots-missing roots missing.db --object 1

# ---- sessions: refusals without a .NET program ----
run snapshot-bad snapshot abc
run snapshot-zero snapshot 0
run snapshot-none snapshot 999999999
run snapshot-self snapshot 1
run attach-bad attach abc
run attach-none attach 999999999
run attach-dur attach 1 --duration abc
run record-noprog record -o x.db
run record-exists record -o r0.db -- true
run record-badmode record --mode bogus -o y.db -- true
run record-badsnap record --snapshot bogus -o y.db -- true
run record-badstacks record --stacks maybe -o y.db -- true
run record-missing record -o z.db -- ./no-such-program
run record-nodotnet record -o t1.db -- true
run record-nodotnet-json record --json -o t2.db -- sh -c 'exit 3'
run record-nodotnet-quiet record -q -o t3.db -- true
run gcs-nodotnet gcs t1.db --json

# ---- every query, on every recording ----
i=0
for db in "${dbs[@]}"; do
  f=r$i.db
  tag=r$i
  run "$tag-info" info $f
  run "$tag-info-json" info $f --json
  run "$tag-gcs" gcs $f
  run "$tag-gcs-json" gcs $f --json
  run "$tag-alloc" allocations $f
  run "$tag-alloc-json" allocations $f --json
  run "$tag-alloc-top" allocations $f --top 3
  run "$tag-alloc-top-json" allocations $f --top 3 --json
  run "$tag-alloc-thread" allocations $f --thread 1
  run "$tag-alloc-thread-name" allocations $f --thread .NET\ TP\ Worker
  run "$tag-alloc-thread-none" allocations $f --thread no-such-thread
  run "$tag-alloc-top-bad" allocations $f --top 0
  run "$tag-surv" survivors $f
  run "$tag-surv-json" survivors $f --json
  run "$tag-surv-gc1" survivors $f --gc 1
  run "$tag-surv-gc1-json" survivors $f --gc 1 --json
  run "$tag-surv-top" survivors $f --top 2
  run "$tag-surv-age" survivors $f --by age
  run "$tag-surv-age-json" survivors $f --by age --json --top 3
  run "$tag-surv-gen" survivors $f --by generation
  run "$tag-surv-by-bad" survivors $f --by size
  run "$tag-surv-gc-bad" survivors $f --gc abc
  run "$tag-surv-gc-none" survivors $f --gc 9999
  run "$tag-snaps" snapshots $f
  run "$tag-snaps-json" snapshots $f --json
  run "$tag-ret" retention $f
  run "$tag-ret-json" retention $f --json
  run "$tag-ret-type" retention $f --by type
  run "$tag-ret-type-json" retention $f --by type --json --top 4
  run "$tag-ret-s1" retention $f --snapshot 1 --top 3
  run "$tag-ret-s-none" retention $f --snapshot 999
  run "$tag-ret-s-bad" retention $f --snapshot x
  run "$tag-ret-by-bad" retention $f --by size
  run "$tag-roots-obj" roots $f --object 5
  run "$tag-roots-obj-json" roots $f --object 5 --json
  run "$tag-roots-obj-all" roots $f --object 5 --all --limit 3
  run "$tag-roots-type" roots $f --type HeapLens.Examples.Leaks.LeakedSession
  run "$tag-roots-type-json" roots $f --type LeakedSession --json
  run "$tag-roots-type-s1" roots $f --type System.String --snapshot 1
  run "$tag-roots-type-none" roots $f --type No.Such.Type
  run "$tag-roots-obj-none" roots $f --object 999999999999
  run "$tag-roots-neither" roots $f
  run "$tag-roots-both" roots $f --object 5 --type System.String
  run "$tag-leaks" leaks $f
  run "$tag-leaks-json" leaks $f --json
  run "$tag-leaks-all" leaks $f --all --top 3
  run "$tag-leaks-top-bad" leaks $f --top x
  run "$tag-diff" diff $f
  run "$tag-diff-json" diff $f --json
  run "$tag-diff-12" diff $f --from 1 --to 2 --all
  run "$tag-diff-top" diff $f --top 3 --json
  run "$tag-diff-bad" diff $f --from 5 --to 2
  run "$tag-diff-none" diff $f --from 99
  run "$tag-diff-file-missing" diff $f --to-file missing.db
  run "$tag-stacks" stacks $f
  run "$tag-stacks-json" stacks $f --json
  run "$tag-stacks-top" stacks $f --top 2 --sort count
  run "$tag-stacks-surv" stacks $f --by survived
  run "$tag-stacks-mid" stacks $f --by mid-life --json
  run "$tag-stacks-gc" stacks $f --gc 2
  run "$tag-stacks-int" stacks $f --interval 1..3 --json
  run "$tag-stacks-int-bad" stacks $f --interval 3..1
  run "$tag-stacks-type" stacks $f --type System.String
  run "$tag-stacks-by-bad" stacks $f --by nothing
  run "$tag-stacks-ss" stacks $f --speedscope $tag.speedscope.json
  file "$tag-stacks-ss" $tag.speedscope.json
  # each twice: the first computes and stores, the second reads what was stored (so does report)
  for pass in 1 2; do
    run "$tag-insp-$pass" inspect $f
    run "$tag-insp-json-$pass" inspect $f --json
    run "$tag-insp-s1-$pass" inspect $f --snapshot 1 --json
    run "$tag-insp-fill0-$pass" inspect $f --max-fill 0 --json
    run "$tag-insp-fill5-$pass" inspect $f --max-fill 0.5
    run "$tag-insp-fill1-$pass" inspect $f --max-fill 1 --json
    run "$tag-insp-dup2-$pass" inspect $f --min-duplicates 2 --json
    run "$tag-insp-subs1-$pass" inspect $f --min-subscribers 1 --json
    run "$tag-insp-all-$pass" inspect $f --min-duplicates 2 --min-subscribers 1 --max-fill 1
  done
  run "$tag-insp-none" inspect $f --snapshot 999
  run "$tag-insp-fill-bad" inspect $f --max-fill 2
  run "$tag-insp-dup-bad" inspect $f --min-duplicates 1
  run "$tag-report-json" report $f --json
  run "$tag-report-html" report $f
  run "$tag-report-o" report $f -o $tag.html
  file "$tag-report-o" $tag.html
  run "$tag-report-json-o" report $f --json -o $tag.json
  file "$tag-report-json-o" $tag.json
  run "$tag-report-dir" report $f -o /
  i=$((i + 1))
done
if [ ${#dbs[@]} -ge 2 ]; then
  run files-diff diff r0.db --to-file r1.db
  run files-diff-json diff r0.db --to-file r1.db --json --all
  last=r$((${#dbs[@]} - 1)).db
  run files-diff-last diff $last --to-file r0.db --top 5
  run files-diff-last-json diff r0.db --to-file $last --json
fi
# What the commands stored (retention tables) must be the same too.
i=0
for db in "${dbs[@]}"; do
  for side in old new; do
    # the rows of `retention`, whichever its form (a table, or the view over retention_blocks)
    sqlite3 "$work/$side/w/r$i.db" ".dump retention_snapshots" ".dump retention_types" \
      "SELECT * FROM retention ORDER BY snapshot, object_id" >"$work/$side/dump" 2>&1
  done
  runs=$((runs + 1))
  cmp -s "$work/old/dump" "$work/new/dump" || { diffs=$((diffs + 1)); echo "DIFF [r$i] stored retention"; }
  i=$((i + 1))
done

echo "compare_commands: $runs runs, $diffs differences"
[ $diffs -eq 0 ]
