#!/usr/bin/env bash
# `heaplens record` without .NET: bad input gets one line on stderr and a non-zero exit, the
# program's exit status is passed through, and nothing is left behind on failure.
# Usage: record_cli_test.sh HEAPLENS
set -u
hl=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
pass=0 fail=0

check() { # name, expected status, actual status, stderr file, expected stderr pattern ("" = silent)
  local name=$1 want=$2 got=$3 err=$4 pattern=$5
  local lines; lines=$(wc -l <"$err")
  local stderr_ok
  if [ -z "$pattern" ]; then [ "$lines" -eq 0 ] && stderr_ok=1; else
    [ "$lines" -eq 1 ] && grep -Eq "$pattern" "$err" && stderr_ok=1; fi
  if [ "$got" -eq "$want" ] && [ -n "${stderr_ok:-}" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: status $got (want $want), stderr ($lines lines):"; sed 's/^/  | /' "$err"
  fi
}

"$hl" record -o a.db -- no-such-program-xyz 2>err; check "missing program" 1 $? err "^heaplens: cannot run 'no-such-program-xyz'"
[ ! -e a.db ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL missing program left a.db"; }

"$hl" record -o a.db -- ./not-here 2>err; check "missing path" 1 $? err "^heaplens: cannot run './not-here'"

"$hl" record -o /nonexistent-dir/x.db -- true 2>err; check "unwritable output" 1 $? err "^heaplens: cannot record to /nonexistent-dir/x.db"

"$hl" record 2>err; check "no program" 1 $? err "^heaplens: record: no program to run"

# a TMPDIR that is missing or a file: said to be TMPDIR's, nothing recorded
TMPDIR=$work/no-such-dir "$hl" record -o t.db -- true 2>err
check "missing TMPDIR" 1 $? err "^heaplens: record: cannot create a directory in $work/no-such-dir \(TMPDIR\): No such file or directory$"
: >tmpfile
TMPDIR=$work/tmpfile "$hl" record -o t.db -- true 2>err
check "TMPDIR a file" 1 $? err "^heaplens: record: cannot create a directory in $work/tmpfile \(TMPDIR\): Not a directory$"
[ ! -e t.db ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a bad TMPDIR left t.db"; }

# a relative TMPDIR: the program is given an absolute socket path, as it connects from its own
# working directory (a script's `cd` before `dotnet` was not recorded: "is it a .NET program?")
mkdir -p reltmp
TMPDIR=reltmp "$hl" record -q -o rel.db -- sh -c 'echo "$HEAPLENS_SOCKET" >sock.txt' 2>err
check "relative TMPDIR" 0 $? err ""
case $(cat sock.txt) in "$(pwd -P)"/reltmp/*) pass=$((pass + 1)) ;; *) fail=$((fail + 1)); echo "FAIL relative TMPDIR: the program's socket path is '$(cat sock.txt)'" ;; esac

# an empty output name is refused as report -o '' refuses it, not as a file that cannot be made
"$hl" record -o '' -- true 2>err; check "empty -o" 1 $? err "^heaplens: record: -o needs a file name$"
"$hl" record --output= -- true 2>err; check "empty --output=" 1 $? err "^heaplens: record: --output needs a file name$"
"$hl" attach 1 -o '' 2>err; check "attach: empty -o" 1 $? err "^heaplens: attach: -o needs a file name$"

# a forgotten output name: the next argument, an option or the separator, is no file name (record
# -o -- true recorded into a file named --)
"$hl" record -o -- true 2>err; check "record -o --" 1 $? err "^heaplens: record: option '-o' needs a file name, not '--' \(--output=-- if that is the name\); see 'heaplens record --help'$"
"$hl" record --output --force -- true 2>err; check "record --output --force" 1 $? err "^heaplens: record: option '--output' needs a file name, not '--force'"
"$hl" attach 1 -o --duration 3 2>err; check "attach -o --duration" 1 $? err "^heaplens: attach: option '--output' needs a value, not '--duration' \(--output=--duration if that is the value\); see 'heaplens attach --help'$"
for f in -- --force --duration; do [ ! -e "./$f" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a file named $f was made"; }; done

# an output named as SQLite names another database's files (x.db-journal beside x.db) would be
# taken for x.db's hot journal (or WAL, or its index) and deleted at x.db's next open: refused,
# --force too, and for import; nothing is created
: >sib.db
for m in journal wal shm; do
  "$hl" record -o sib.db-$m -- true 2>err; check "record -o sib.db-$m" 1 $? err "^heaplens: cannot record to sib.db-$m: SQLite would take it for sib.db's .* when sib.db is next opened; choose another name$"
done
"$hl" record --force -o sib.db-journal -- true 2>err; check "record --force -o sib.db-journal" 1 $? err "^heaplens: cannot record to sib.db-journal: SQLite would take it for sib.db's rollback journal"
"$hl" import sib.gcdump -o sib.db-wal 2>err; check "import -o sib.db-wal" 1 $? err "^heaplens: import: cannot import to sib.db-wal: SQLite would take it for sib.db's write-ahead log"
[ -z "$(ls sib.db-* 2>/dev/null)" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a refused sibling was created:"; ls sib.db-*; }

"$hl" record --bogus -- true 2>err; check "bad option" 1 $? err "^heaplens: record: unknown option '--bogus'"

# --census on|off: sampled mode's census of gen0; a bad value, a missing one, and full mode (the
# default, or said) refused in one line, before anything starts
"$hl" record --mode sampled --census maybe -o c.db -- true 2>err; check "record --census maybe" 1 $? err "^heaplens: record: --census takes on or off, not 'maybe'$"
"$hl" record --mode sampled --census= -o c.db -- true 2>err; check "record --census=" 1 $? err "^heaplens: record: --census takes on or off, not ''$"
"$hl" record --mode sampled --census 2>err; check "record --census without a value" 1 $? err "^heaplens: record: --census needs on or off$"
"$hl" record --census off -o c.db -- true 2>err; check "record --census in full mode (default)" 1 $? err "^heaplens: record: --census needs --mode sampled \(full mode counts every allocation by the runtime's ObjectAllocated, no census\)$"
"$hl" record --census=on --mode full -o c.db -- true 2>err; check "record --census=on --mode full" 1 $? err "^heaplens: record: --census needs --mode sampled"
"$hl" attach 1 --census no 2>err; check "attach --census no" 1 $? err "^heaplens: attach: --census takes on or off, not 'no'$"
HEAPLENS_CENSUS=maybe "$hl" record --mode sampled -o c.db -- true 2>err; check "HEAPLENS_CENSUS=maybe" 1 $? err "^heaplens: record: HEAPLENS_CENSUS='maybe' is not a value it takes: on or off \(sampled mode's census of gen0, as --census sets it\), or leave it unset$"
[ ! -e c.db ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a refused --census left c.db"; }

"$hl" record -o b.db -- true 2>err; check "non-.NET program" 0 $? err "never loaded the collector"
# A profiler path of the user's that the runtime would read before CORECLR_PROFILER_PATH (on its
# kind of host) is not passed on: heaplens' collector is the one loaded.
rm -f paths.db
CORECLR_PROFILER_PATH_64=/other/p.so CORECLR_PROFILER_PATH_ARM64=/other/p.so CORECLR_PROFILER_PATH_32=/other/p.so \
  CORECLR_PROFILER_PATH_ARM32=/other/p.so "$hl" record -q -o paths.db -- env >env.txt 2>err
check "other profiler paths" 0 $? err ""
if grep -q '^CORECLR_PROFILER_PATH=.*libheaplens.so$' env.txt && ! grep -q '^CORECLR_PROFILER_PATH_' env.txt; then
  pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL the program's profiler paths:"; grep CORECLR_PROFILER_PATH env.txt; fi
# --json: the summary is the last line of standard output, after the program's own lines there
rm -f jl.db
"$hl" record --json -o jl.db -- sh -c 'echo hello; echo "{not json"; exit 5' >out.txt 2>err; check "record --json" 5 $? err ""
if [ "$(sed -n 1,2p out.txt)" = "$(printf 'hello\n{not json')" ] && [ "$(wc -l <out.txt)" -eq 3 ] &&
   tail -n 1 out.txt | python3 -c 'import json, sys; d = json.load(sys.stdin); sys.exit(d["file"] != "jl.db")'; then
  pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL record --json: the summary is not the last line:"; cat out.txt; fi
# ... a line of its own when the program's output does not end its last line (it joined it):
# into a file, whose last byte heaplens reads back, and through a pipe, which it cannot (a newline
# always goes first there)
summary_last() { # file, what must come before the summary line
  [ "$(head -n -1 "$1")" = "$2" ] && tail -n 1 "$1" | python3 -c 'import json, sys; json.load(sys.stdin)'
}
rm -f jn.db*
"$hl" record --json -o jn.db -- sh -c 'printf "hello\nno newline"' >out.txt 2>err; check "record --json, no final newline" 0 $? err ""
summary_last out.txt "$(printf 'hello\nno newline')" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL record --json joined the program's last line:"; cat out.txt; }
rm -f jn.db*
"$hl" record --json -o jn.db -- sh -c 'printf "hello\nno newline"' 2>err | cat >out.txt; check "record --json | cat, no final newline" 0 $? err ""
summary_last out.txt "$(printf 'hello\nno newline')" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL record --json | cat joined the program's last line:"; cat out.txt; }
rm -f jn.db*
printf 'before' >out.txt # appended to: what was there before counts too
"$hl" record --json -o jn.db -- true >>out.txt 2>err; check "record --json >>" 0 $? err ""
summary_last out.txt "before" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL record --json >> joined the file's last line:"; cat out.txt; }
# A closed stdout (>&-) loses nothing without --json (the summary line is on stderr); with it the
# summary asked for is lost: said in one line, the exit status still the program's
rm -f cl.db*
"$hl" record -q -o cl.db -- sh -c 'exit 4' >&- 2>err; check "record >&-" 4 $? err ""
rm -f cl.db*
"$hl" record --json -o cl.db -- sh -c 'exit 4' >&- 2>err
check "record --json >&-" 4 $? err "^heaplens: cl.db is complete, but writing the output failed: Bad file descriptor$"
# The database removed, or replaced by another recording, while the writer serves it: said so, and
# the file now named so is not touched (the writer's end was stored into it, status, loss and
# exit status, and the summary read it as this recording's).
rm -f other.db* gone.db* swap.db*
"$hl" record -q -o other.db -- true 2>err
python3 -c 'import sqlite3; c = sqlite3.connect("other.db"); c.execute("UPDATE run SET status = ? , exit_status = NULL", ("recording",)); c.commit()'
before=$(sha256sum <other.db)
"$hl" record -o swap.db -- sh -c 'rm -f swap.db swap.db-wal swap.db-shm; cp other.db swap.db; exit 6' 2>err
rc=$?; grep -v '^heaplens: writer: ' err >err2
check "database replaced while recorded" 6 $rc err2 "^heaplens: the writer failed: swap.db was replaced by another file while it was being recorded: the recording is lost \(that file is left as it is\)$"
[ "$(sha256sum <swap.db)" = "$before" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL the file put in the recording's place was written to"; }
"$hl" record -o gone.db -- sh -c 'rm -f gone.db gone.db-wal gone.db-shm' 2>err
rc=$?; grep -v '^heaplens: writer: ' err >err2
check "database removed while recorded" 0 $rc err2 "^heaplens: the writer failed: gone.db was removed while it was being recorded: the recording is lost$"
[ ! -e gone.db ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL gone.db was created again"; }
# The same for a descendant's database under --children, through the same check: a stand-in for a
# descendant's collector connects to the children server, waits until its writer serves (its
# control socket answers a request), removes its database or puts another recording there, and
# ends its stream. Before, the recorder said the file "holds what was committed before".
cat >descendant.py <<'PY'
import os, shutil, socket, sys, time
d = os.path.dirname(os.environ["HEAPLENS_SOCKET"])
conn = socket.socket(socket.AF_UNIX)
conn.connect(os.path.join(d, "children.sock"))
deadline = time.monotonic() + 120  # a condition waited for, not a time: the writer's answer
while True:
    try:
        c = socket.socket(socket.AF_UNIX)
        c.connect(os.path.join(d, "control.%d.sock" % os.getpid()))
        c.sendall(b"ready?\n")
        if c.recv(100):
            break
    except OSError:
        pass
    if time.monotonic() > deadline:
        sys.exit("the descendant's writer never served")
    time.sleep(0.01)
db = "desc.%d.db" % os.getpid()
for suffix in ("", "-wal", "-shm", "-journal"):
    if os.path.exists(db + suffix):
        os.remove(db + suffix)
if sys.argv[1] == "replace":
    shutil.copy("other.db", db)
open("descendant.pid", "w").write(str(os.getpid()))
conn.close()
PY
rm -f desc.*
"$hl" record -q -o desc.db --children -- python3 descendant.py remove 2>err; rc=$?; p=$(cat descendant.pid)
check "--children: a database removed while recorded" 0 $rc err "^heaplens: the writer of pid $p failed: desc.$p.db was removed while it was being recorded: the recording is lost$"
[ ! -e desc.$p.db ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL desc.$p.db was created again"; }
rm -f desc.*
"$hl" record -q -o desc.db --children -- python3 descendant.py replace 2>err; rc=$?; p=$(cat descendant.pid)
check "--children: a database replaced while recorded" 0 $rc err "^heaplens: the writer of pid $p failed: desc.$p.db was replaced by another file while it was being recorded: the recording is lost \(that file is left as it is\)$"
[ "$(sha256sum <desc.$p.db)" = "$before" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL the file put in the descendant's recording's place was written to"; }
# The runtime's own switches that forbid a profiler are named as the cause, not "is it a .NET program?"
for v in DOTNET_EnableDiagnostics=0 COMPlus_EnableDiagnostics=00 DOTNET_EnableDiagnostics_Profiler=0x0; do
  rm -f veto.db
  env "$v" "$hl" record -o veto.db -- true 2>err; check "$v" 0 $? err "^heaplens: warning: the program never loaded the collector: $v in its environment forbids the runtime to load a profiler \(unset it\); veto.db holds no data$"
done
rm -f veto.db
DOTNET_EnableDiagnostics=1 COMPlus_EnableDiagnostics=0 "$hl" record -o veto.db -- true 2>err; check "DOTNET_ read before COMPlus_" 0 $? err "\(is it a \.NET program\? or did its launcher set CORECLR_ENABLE_PROFILING=0 or DOTNET_EnableDiagnostics=0\?\)"
# ... and so are those the program's launcher sets: `env` in the command line (a wrapper script's
# child is looked at while it runs: test session.veto_*)
for v in CORECLR_ENABLE_PROFILING=0 DOTNET_EnableDiagnostics=0; do
  rm -f veto.db
  "$hl" record -o veto.db -- env "$v" true 2>err; check "env $v" 0 $? err "^heaplens: warning: the program never loaded the collector: env in its command line gives it $v, which keeps the runtime from loading a profiler; veto.db holds no data$"
done
rm -f veto.db
"$hl" record -o veto.db -- env -u CORECLR_ENABLE_PROFILING true 2>err; check "env -u CORECLR_ENABLE_PROFILING" 0 $? err "^heaplens: warning: the program never loaded the collector: env in its command line gives it no CORECLR_ENABLE_PROFILING, which keeps the runtime from loading a profiler; veto.db holds no data$"
rm -f veto.db
"$hl" info b.db --json >info.json 2>/dev/null && grep -q '"no-data"' info.json && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL info of a no-data recording"; cat info.json; }

"$hl" record -o b.db -- true 2>err; check "existing output" 1 $? err "^heaplens: b.db already exists"

touch c.db-wal  # the leftover of a killed writer is part of the database c.db
"$hl" record -o c.db -- true 2>err; check "leftover WAL" 1 $? err "^heaplens: c.db-wal already exists"
"$hl" record --force -q -o c.db -- true 2>err; check "--force takes the leftover away" 0 $? err ""
[ ! -e c.db-wal ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --force left c.db-wal"; }

"$hl" record --force -q -o b.db -- sh -c 'exit 7' 2>err; check "exit status passed through" 7 $? err ""

"$hl" record --force -q -o b.db -- sh -c 'kill -9 $$' 2>err; check "signal passed through" 137 $? err ""

# A program killed before it loaded the collector: said so, not asked whether it is a .NET program
"$hl" record --force -o early.db -- sh -c 'kill -TERM $$' 2>err
check "killed before the collector" 143 $? err "^heaplens: the program was killed by signal 15 \(Terminated\) before it loaded the collector; early.db holds no data$"

# A signal that reaches heaplens before the program started (Ctrl-C at once; a SIGTERM from a
# service manager) ended heaplens alone: the database was left 'recording', empty or 'no data'.
# Now the program is not started, nothing is left, and heaplens ends by that signal. strace
# delivers it deterministically at heaplens' first fork (the writer's), as SIGINT from the
# terminal comes (si_code SI_KERNEL, which heaplens does not forward once the program runs).
for sig in INT TERM; do
  rm -f ran
  strace -o /dev/null -e trace=clone -e inject=clone:signal=SIG$sig:when=1 \
    "$hl" record -o early-$sig.db -- sh -c 'touch ran' 2>err
  status=$?
  check "SIG$sig before the program started" $((128 + $(kill -l $sig))) $status err "^heaplens: record: .* before the program started: nothing was recorded$"
  [ ! -e ran ] && [ -z "$(ls early-$sig.db* 2>/dev/null)" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL SIG$sig before the start: the program ran or a file was left"; ls early-$sig.db* ran; }
done

# ... and with --force the old recording stays: nothing was recorded to replace it (before, it
# was removed as soon as the writer had created the new file, which the signal then removed too).
# The same for a program that cannot be run although access() lets it (a directory: exec fails).
"$hl" record -q -o old.db -- echo old-recording >/dev/null 2>err; check "a recording to keep (early)" 0 $? err ""
cp old.db old.copy
rm -f ran
strace -o /dev/null -e trace=clone -e inject=clone:signal=SIGTERM:when=1 \
  "$hl" record --force -o old.db -- sh -c 'touch ran' 2>err
check "SIGTERM before the program started, --force" 143 $? err "^heaplens: record: Terminated before the program started: nothing was recorded \(the old recording was kept\)$"
cmp -s old.db old.copy && [ ! -e ran ] && [ -z "$(ls -A | grep -e heaplens-replaced -e 'old\.db-')" ] \
  && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a signal before the start lost the old recording (--force)"; ls -A; }
mkdir notaprogram
"$hl" record --force -o old.db -- "$work/notaprogram" 2>err
check "--force, a program that cannot be run" 1 $? err "^heaplens: cannot run '$work/notaprogram': Permission denied \(the old recording was kept\)$"
cmp -s old.db old.copy && [ -z "$(ls -A | grep -e heaplens-replaced -e 'old\.db-')" ] \
  && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a program that cannot be run lost the old recording (--force)"; ls -A; }

# --max-snapshots and --snapshot-interval take their whole ranges (1 to 1,000,000; 0 to
# 31,622,400 s), the number as the collector reads it (no leading zeros); out of range is one
# line naming both bounds (query.range_messages)
"$hl" record -q -o rng.db --max-snapshots 1000000 --snapshot-interval 31622400 \
  -- sh -c 'echo "$HEAPLENS_SNAPSHOT" >policy.txt' 2>err
check "the largest --max-snapshots and --snapshot-interval" 0 $? err ""
"$hl" record -q --force -o rng.db --max-snapshots 007 --snapshot-interval 0 \
  -- sh -c 'echo "$HEAPLENS_SNAPSHOT" >>policy.txt' 2>err
check "--max-snapshots 007" 0 $? err ""
[ "$(cat policy.txt)" = "$(printf 'max-snapshots:1000000,min-interval:31622400\nmax-snapshots:7,min-interval:0')" ] \
  && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL the policies given to the program:"; cat policy.txt; }
"$hl" record -o rng2.db --max-snapshots 1000001 -- true 2>err
check "--max-snapshots 1000001" 1 $? err "^heaplens: record: --max-snapshots takes a whole number from 1 to 1,000,000, not '1000001'$"

# --count with its pattern forgotten takes no option or separator for one: "--count -- sh ..."
# ran the program counting a pattern '--' (attach the same, before it looks for the process).
rm -f ran
"$hl" record -o cnt.db --count -- sh -c 'touch ran' 2>err
check "--count without a pattern" 1 $? err "^heaplens: record: option '--count' needs a method pattern \(Namespace.Type.Method, \* wildcards\), not '--'; see 'heaplens record --help'$"
[ ! -e ran ] && [ ! -e cnt.db ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --count --: the program ran or cnt.db was made"; }
"$hl" attach 1 --count -o cnt.db 2>err
check "attach --count without a pattern" 1 $? err "^heaplens: attach: option '--count' needs a method pattern \(Namespace.Type.Method, \* wildcards\), not '-o'; see 'heaplens attach --help'$"
[ ! -e cnt.db ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL attach --count -o: cnt.db was made"; }

# A name the file system takes, but not with SQLite's "-journal" after it (or, with --children,
# not for a descendant's "NAME.PID.db-journal"): refused before the program runs (before, it ran
# and the recording failed mid-way: "unable to open database file").
long=$(printf 'n%.0s' $(seq 245))
for kids in "" --children; do
  rm -f ran
  "$hl" record -o "$long.db" $kids -- sh -c 'touch ran' 2>err
  check "too long for SQLite's journal ${kids:-alone}" 1 $? err "^heaplens: cannot record to $long.db: its name is too long: the name of SQLite's journal beside .* would be 256 bytes, over the 255 this file system takes \(name it 1 byte shorter\)$"
  [ ! -e ran ] && [ -z "$(ls "$long".* 2>/dev/null)" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL too long a name: the program ran or a file was left"; }
  long=${long:8}
done
rm -f ran
# import the same: one line, nothing created (before: SQLite's "unable to open database file")
long=$(printf 'n%.0s' $(seq 245))
"$hl" import sib.gcdump -o "$long.db" 2>err
check "import: too long for SQLite's journal" 1 $? err "^heaplens: import: cannot import to $long.db: its name is too long: the name of SQLite's journal beside it would be 256 bytes, over the 255 this file system takes \(name it 1 byte shorter\)$"
[ -z "$(ls "$long".* 2>/dev/null)" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL import: too long a name left a file"; }

# The output must be a regular file: a FIFO or a device is refused, never removed (even with
# --force); through a symbolic link, the database goes beside the link's target.
mkfifo fifo
"$hl" record --force -o fifo -- true 2>err; check "FIFO output" 1 $? err "^heaplens: cannot record to fifo: it is not a regular file"
[ -p fifo ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL the FIFO was replaced"; }
"$hl" record --force -o /dev/null -- true 2>err; check "device output" 1 $? err "^heaplens: cannot record to /dev/null: it is not a regular file"
[ -c /dev/null ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL /dev/null was replaced"; }
echo old >target.db; ln -s target.db link.db
"$hl" record --force -q -o link.db -- true 2>err; check "--force through a symlink" 0 $? err ""
[ -L link.db ] && [ "$(readlink link.db)" = target.db ] && [ "$(head -c 15 target.db)" = "SQLite format 3" ] \
  && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL the symlink was replaced or its target not written"; ls -l; }

# --force never replaces a recording still being written: its writer would go on into a file
# nobody can reach (the second recording took the name; the first was lost whole). The first
# recording's program says so on a FIFO once its writer has the file open, then waits for a line.
mkfifo hold said
exec 8<>said # opened without waiting for a writer: a recorder that failed is not waited on
"$hl" record -q -o live.db -- sh -c 'echo ready >said; read line' <hold 2>live.err &
live=$!
exec 9>hold
until read -t 1 -r line <&8; do kill -0 $live 2>/dev/null || break; done # the recorder may fail
"$hl" record --force -q -o live.db -- true 2>err; check "--force on a recording in progress" 1 $? err "^heaplens: cannot replace live.db: process [0-9]+ has it open"
{ echo end >&9; } 2>/dev/null; exec 9>&-
wait $live; check "the recording in progress ends" 0 $? live.err ""
"$hl" info live.db --json >info.json 2>/dev/null && grep -q 'echo ready' info.json && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL the recording in progress was not kept"; cat info.json; }
"$hl" record --force -q -o live.db -- true 2>err; check "--force once it has ended" 0 $? err ""

# --force moves the old set aside until the new database exists: when it cannot be created (here
# a file-size limit kills the writer's first write; a full disk likewise) the old recording is
# put back whole, its SQLite files too, and the one line says so; nothing set aside is left.
"$hl" record -q -o keep.db -- echo old-recording >/dev/null 2>err; check "a recording to keep" 0 $? err ""
printf 'not a real log' >keep.db-wal
cp keep.db keep.copy && cp keep.db-wal wal.copy
(ulimit -f 1; "$hl" record --force -q -o keep.db -- echo new-recording) >/dev/null 2>err
check "--force when the new database cannot be created" 1 $? err "^heaplens: cannot record to .*keep\.db: .*\(the old recording was kept\)$"
cmp -s keep.db keep.copy && cmp -s keep.db-wal wal.copy && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --force lost the old recording"; ls -la; }
ls -A | grep -q heaplens-replaced && { fail=$((fail + 1)); echo "FAIL a set aside was left"; ls -A; } || pass=$((pass + 1))
rm -f keep.db-wal
"$hl" record --force -q -o keep.db -- echo new-recording >/dev/null 2>err; check "--force replaces it" 0 $? err ""
"$hl" info keep.db --json >info.json 2>/dev/null && grep -q new-recording info.json && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --force did not replace the old recording"; cat info.json; }
ls -A | grep -q heaplens-replaced && { fail=$((fail + 1)); echo "FAIL the old set was left aside"; ls -A; } || pass=$((pass + 1))

# A heaplens killed between setting the old set aside and creating the new database leaves
# .FILE.heaplens-replaced-PID (and its -wal): found afterwards. A reading command names it and how
# to get it back, touching nothing; record -o FILE puts it back when FILE's set is gone (then
# refuses without --force, as for any FILE that exists; --force replaces it), names it otherwise.
dead=$(sh -c 'echo $$')        # a pid that has ended (its shell waited for)
aside=.left.db.heaplens-replaced-$dead
printf 'the old main file' >"$aside"; printf 'the old log' >"$aside-wal"
cp "$aside" old.copy; cp "$aside-wal" oldwal.copy
"$hl" info left.db 2>err; check "info FILE, left aside" 1 $? err "^heaplens: left\.db does not exist; \./$aside \(with its -wal\) is the old left\.db that a heaplens killed while replacing it \(--force\) set aside: rename it back to left\.db \(each file, with its suffix\) to keep it$"
cmp -s "$aside" old.copy && cmp -s "$aside-wal" oldwal.copy && [ ! -e left.db ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL info touched the set aside"; ls -A; }
"$hl" record -q -o left.db -- true 2>err; check "record -o FILE, left aside" 1 $? err "^heaplens: left\.db already exists \(put back from \./$aside, where a heaplens killed while replacing it \(--force\) had set it aside\); choose another name with -o, or --force to replace it$"
cmp -s left.db old.copy && cmp -s left.db-wal oldwal.copy && [ ! -e "$aside" ] && [ ! -e "$aside-wal" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL record did not put the set aside back"; ls -A; }
# beside a FILE that exists again: named, never taken (renamed back it would replace FILE)
cp old.copy "$aside"
"$hl" record -q -o left.db -- true 2>err; check "record -o FILE beside FILE" 1 $? err "^heaplens: left\.db already exists \(and \./$aside is the old left\.db .*: give it a name of its own to keep it, or remove it\); choose another name"
"$hl" record --force -q -o left.db -- echo new-recording >/dev/null 2>err; check "record --force beside FILE" 0 $? err "^heaplens: note: .*/$aside is the old .*left\.db .*give it a name of its own"
cmp -s "$aside" old.copy && "$hl" info left.db --json 2>/dev/null | grep -q new-recording && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL record --force took the set aside or did not record"; ls -A; }
# FILE gone, --force: put back (said), then replaced as --force replaces any FILE
rm -f left.db left.db-wal
"$hl" record --force -q -o left.db -- echo newer-recording >/dev/null 2>err; check "record --force, left aside" 0 $? err "^heaplens: put left\.db back from \./$aside, where a heaplens killed while replacing it \(--force\) had set it aside; --force now replaces it$"
"$hl" info left.db --json 2>/dev/null | grep -q newer-recording && ! ls -A | grep -q heaplens-replaced && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL record --force after putting back"; ls -A; }
# one a live heaplens set aside is its replacement in progress: neither named nor taken
cp "$(command -v sleep)" ./heaplens
./heaplens 300 &
busy=$!
printf 'in progress' >".gone.db.heaplens-replaced-$busy"
"$hl" info gone.db 2>err; check "info FILE, a live heaplens replacing it" 1 $? err "^heaplens: gone\.db does not exist$"
"$hl" record -q -o gone.db -- true 2>err; check "record -o FILE, a live heaplens replacing it" 0 $? err ""
[ -e ".gone.db.heaplens-replaced-$busy" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL the set of a live heaplens was taken"; ls -A; }
kill "$busy"; wait "$busy" 2>/dev/null
# ... but one killed and not yet waited for (a zombie: its parent never waits) creates nothing
sh -c './heaplens 0 & echo $! >zombie.pid; exec sleep 300' &
parent=$!
until [ -s zombie.pid ] && grep -q ') Z' "/proc/$(cat zombie.pid)/stat" 2>/dev/null; do kill -0 $parent || break; done
zombie=$(cat zombie.pid)
printf 'the old main file' >".dead.db.heaplens-replaced-$zombie"
"$hl" info dead.db 2>err; check "info FILE, a zombie heaplens' set" 1 $? err "^heaplens: dead\.db does not exist; \./\.dead\.db\.heaplens-replaced-$zombie is the old dead\.db"
kill "$parent"; wait "$parent" 2>/dev/null; rm -f ./heaplens

# SIGUSR1 and SIGUSR2 sent to heaplens alone go on to the program, as SIGTERM does: by default
# they ended heaplens and left the program running, its exit status lost. The program traps
# them and exits with a status of its own.
mkfifo said_usr
exec 7<>said_usr
for sig in USR1 USR2; do
  "$hl" record --force -q -o usr.db -- sh -c 'trap "kill \$!; exit 5" '$sig'; sleep 1000 & echo $$ $! >said_usr; wait' 2>err &
  rec=$!
  until read -t 1 -r shell sleeper <&7; do kill -0 $rec 2>/dev/null || break; done
  kill -$sig $rec
  wait $rec; check "SIG$sig passed on" 5 $? err ""
  kill "$shell" "$sleeper" 2>/dev/null # left running when the signal was not passed on
done
# Sent to the whole process group (heaplens in a session of its own), it reaches heaplens' writer
# too, which must outlive the program to finish the recording, as it does SIGTERM.
setsid "$hl" record --force -q -o usr.db -- sh -c 'trap "kill \$! 2>/dev/null; exit 5" USR1; sleep 1000 & echo $$ $! >said_usr; wait' 2>err &
rec=$!
until read -t 1 -r shell sleeper <&7; do kill -0 $rec 2>/dev/null || break; done
kill -USR1 -- -$rec
wait $rec; check "SIGUSR1 to the process group" 5 $? err ""
kill "$shell" "$sleeper" 2>/dev/null

"$hl" record --help >out 2>err; check "help" 0 $? err ""
grep -q "usage: heaplens record" out && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL help text"; }
grep -q -- "--children\[=PATTERN\]" out && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL help: --children"; }

# --children with a program that is no .NET program: its status passes through, one warning,
# no database of a descendant.
"$hl" record -o kids.db --children -- sh -c 'exit 3' 2>err; check "--children, non-.NET program" 3 $? err "never loaded the collector"
[ "$(ls kids.* | tr '\n' ' ')" = "kids.db " ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --children left"; ls kids.*; }
# An empty pattern would match every descendant: refused, the program never started.
"$hl" record -o kids3.db --children= -- sh -c 'touch ran' 2>err; check "--children= (empty pattern)" 1 $? err "^heaplens: record: --children= needs a pattern"
[ ! -e kids3.db ] && [ ! -e ran ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --children=: ran the program or left kids3.db"; }
"$hl" record -o kids2.db --children=x -- no-such-program-xyz 2>err; check "--children, missing program" 1 $? err "^heaplens: cannot run 'no-such-program-xyz'"
[ ! -e kids2.db ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL --children: missing program left kids2.db"; }

# HEAPLENS_* settings the program would inherit: a value the setting does not take is refused
# before anything starts, in one line naming the variable and what it takes; nothing is left.
for v in 0 -1 abc 99999999 ' 5' ''; do
  HEAPLENS_POOL_MB="$v" "$hl" record -o set.db -- true 2>err
  check "HEAPLENS_POOL_MB='$v'" 1 $? err "^heaplens: record: HEAPLENS_POOL_MB='$v' is not a value it takes: a whole number from 1 to 65536"
done
HEAPLENS_BUFFER_MB=16385 "$hl" record -o set.db -- true 2>err; check "HEAPLENS_BUFFER_MB too large" 1 $? err "HEAPLENS_BUFFER_MB='16385' .* from 1 to 16384"
HEAPLENS_STATS=yes "$hl" record -o set.db -- true 2>err; check "HEAPLENS_STATS=yes" 1 $? err "HEAPLENS_STATS='yes' .*: 0 or 1"
HEAPLENS_SAMPLE_SOURCE=Tick "$hl" record -o set.db -- true 2>err; check "HEAPLENS_SAMPLE_SOURCE=Tick" 1 $? err "auto or tick"
HEAPLENS_RANGES=no "$hl" record -o set.db -- true 2>err; check "HEAPLENS_RANGES=no" 1 $? err "HEAPLENS_RANGES='no' .*: on or off .*survivor ranges"
HEAPLENS_SESSION=0 "$hl" record -o set.db -- true 2>err; check "HEAPLENS_SESSION=0" 1 $? err "HEAPLENS_SESSION='0' .*: on or off .*EventPipe session"
HEAPLENS_EMPTY_SAMPLES=on "$hl" record -o set.db -- true 2>err; check "HEAPLENS_EMPTY_SAMPLES=on" 1 $? err "HEAPLENS_EMPTY_SAMPLES='on' .*: 0 or 1 .*allocation samples"
HEAPLENS_SAMPLE_BUDGET=1k "$hl" record -o set.db -- true 2>err; check "HEAPLENS_SAMPLE_BUDGET with a unit" 1 $? err "HEAPLENS_SAMPLE_BUDGET='1k' .* from 0 to 100000000"
HEAPLENS_CENSUS_THREADS=0 "$hl" record -o set.db -- true 2>err; check "HEAPLENS_CENSUS_THREADS=0" 1 $? err "HEAPLENS_CENSUS_THREADS='0' .* from 1 to 64"
HEAPLENS_CENSUS_THREADS=65 "$hl" record -o set.db -- true 2>err; check "HEAPLENS_CENSUS_THREADS=65" 1 $? err "HEAPLENS_CENSUS_THREADS='65' .* from 1 to 64"
HEAPLENS_CENSUS_FLOOR=yes "$hl" record -o set.db -- true 2>err; check "HEAPLENS_CENSUS_FLOOR=yes" 1 $? err "HEAPLENS_CENSUS_FLOOR='yes' .*: 0 or 1"
[ ! -e set.db ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a refused setting left set.db"; }
HEAPLENS_SAMPLE_BUDGET=0 HEAPLENS_POOL_MB=8 HEAPLENS_BUFFER_MB=1 HEAPLENS_STATS=0 HEAPLENS_SESSION=off HEAPLENS_EMPTY_SAMPLES=1 HEAPLENS_CENSUS_THREADS=64 HEAPLENS_CENSUS_FLOOR=1 "$hl" record -q -o set.db -- true 2>err; check "sensible settings" 0 $? err ""

# A TMPDIR too long for the session's unix sockets: the sockets go to /tmp/heaplens-UID, the
# recording works, nothing is left in either.
long=$work/$(printf 'd%.0s' $(seq 1 90))
mkdir -p "$long"
TMPDIR=$long "$hl" record -q -o tmp.db -- sh -c 'echo "$HEAPLENS_SOCKET"' >out 2>err &
rec=$!
wait $rec; check "TMPDIR too long: recorded" 0 $? err ""
grep -Eq "^/tmp/heaplens-$(id -u)/heaplens-$rec-[A-Za-z0-9]{6}/collector.sock$" out && [ -e tmp.db ] &&
  pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a long TMPDIR: socket $(cat out)"; }
[ -z "$(ls -A "$long")" ] && ! ls -d "/tmp/heaplens-$(id -u)/heaplens-$rec-"* >/dev/null 2>&1 &&
  pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL a long TMPDIR left"; ls -A "$long"; }

# A session file whose writer is gone (an attach session whose recorder and writer were killed,
# or one its writer ended after its recorder was killed: the control socket removed or served by
# nobody) is stale: the process is not recorded. Before, `snapshot` said "cannot reach the
# recording's writer" and `attach` refused the process as one that already has a profiler, for
# as long as it ran.
mkdir -m 700 xdg xdg/heaplens
sleep 300 &
live=$!
python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$work/dead.sock"
for control in "$work/gone.sock" "$work/dead.sock"; do
  printf 'control %s\ndb %s\n' "$control" "$work/s.db" >"xdg/heaplens/$live"
  XDG_RUNTIME_DIR=$work/xdg "$hl" snapshot "$live" 2>err; status=$?
  check "stale session file (${control##*/})" 1 $status err "^heaplens: process $live is not being recorded \(start it with 'heaplens record'\)$"
  [ ! -e "xdg/heaplens/$live" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL the stale session file of $live was left"; }
done
kill "$live"
wait "$live" 2>/dev/null

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
