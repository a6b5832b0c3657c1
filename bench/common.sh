# common.sh — what bench/overhead/run.sh and bench/snapshot/run.sh share, sourced after their
# option parsing: the checks of what they need, a work directory, and the example program built
# into it. Each function reads and sets the caller's variables (heaplens, workdir, keep, dll,
# repo) and exits 1 with one line on stderr when it cannot go on.

# bench_check_tools: --heaplens given and executable, dotnet on PATH.
bench_check_tools() {
    [ -n "$heaplens" ] || { echo "run.sh: --heaplens PATH is required" >&2; exit 1; }
    [ -x "$heaplens" ] || { echo "run.sh: $heaplens is not executable" >&2; exit 1; }
    command -v dotnet >/dev/null || { echo "run.sh: dotnet not found" >&2; exit 1; }
}

# bench_workdir_make NAME: without --workdir, a new temporary folder heaplens-NAME.XXXXXX,
# removed at exit unless --keep; the folder made.
bench_workdir_make() {
    if [ -z "$workdir" ]; then
        workdir=$(mktemp -d "${TMPDIR:-/tmp}/heaplens-$1.XXXXXX")
        [ "$keep" = 1 ] || trap 'rm -rf "$workdir"' EXIT
    fi
    mkdir -p "$workdir"
}

# bench_example_build NAME: without --dll, examples/NAME built (Release) into $workdir/NAME and
# dll set to its NAME.dll; the dll must exist.
bench_example_build() {
    if [ -z "$dll" ]; then
        echo "building $1 (Release) into $workdir/$1 ..."
        dotnet build "$repo/examples/$1/$1.csproj" -c Release --nologo -v quiet \
            -o "$workdir/$1" -p:HeapLensBuildRoot="$workdir/build/" >"$workdir/build.log" 2>&1 \
            || { cat "$workdir/build.log" >&2; echo "run.sh: build failed" >&2; exit 1; }
        dll=$workdir/$1/$1.dll
    fi
    [ -f "$dll" ] || { echo "run.sh: $dll not found" >&2; exit 1; }
}
