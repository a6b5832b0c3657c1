#!/usr/bin/env bash
# The main job: set up, record an example .NET program, and print what heaplens found.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh

out=out/demo
mkdir -p "$out"
echo "demo: building examples/AllocPatterns"
dotnet build examples/AllocPatterns -c Release -o "$out/AllocPatterns" -nologo -v quiet >/dev/null

hl=build/bin/heaplens
echo
echo "\$ heaplens record -o $out/demo.db -- dotnet $out/AllocPatterns/AllocPatterns.dll"
# The program's own report of itself goes to a file; heaplens's summary line comes on stderr.
$hl record --force -o "$out/demo.db" -- dotnet "$out/AllocPatterns/AllocPatterns.dll" \
    "$out/ground-truth.json" >"$out/program-output.txt"
echo
echo "\$ heaplens gcs $out/demo.db"
$hl gcs "$out/demo.db"
echo
echo "\$ heaplens allocations $out/demo.db --top 10"
$hl allocations "$out/demo.db" --top 10
echo
echo "\$ heaplens survivors $out/demo.db --top 10"
$hl survivors "$out/demo.db" --top 10
echo
echo "\$ heaplens snapshots $out/demo.db"
$hl snapshots "$out/demo.db"
echo
echo "\$ heaplens retention $out/demo.db --top 5"
$hl retention "$out/demo.db" --top 5
echo
echo "\$ heaplens report $out/demo.db -o $out/report.html"
$hl report "$out/demo.db" -o "$out/report.html"
echo "(open $out/report.html in a browser)"
echo
echo "The recording is $out/demo.db: try 'sqlite3 $out/demo.db' (schema: store/SCHEMA.md) or the queries in examples/queries/."
