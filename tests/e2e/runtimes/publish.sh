#!/usr/bin/env bash
# Publishes an example self-contained for an older runtime, so that the e2e tests run against
# .NET 8 or 9 although only the .NET 10 SDK is installed (the runtime packs come from NuGet).
#
#   publish.sh EXAMPLE_CSPROJ TFM OUT_DIR BUILD_ROOT      e.g. .../AllocPatterns.csproj net8.0 out/ build/
#
# examples/NuGet.Config clears every package source (the examples need none for net10.0), so the
# runtime pack is restored with the user's own NuGet configuration instead.
set -euo pipefail
csproj=$1 tfm=$2 out=$3 root=$4
config=()
[ -f "$HOME/.nuget/NuGet/NuGet.Config" ] && config=(--configfile "$HOME/.nuget/NuGet/NuGet.Config")
props=(-p:TargetFramework="$tfm" -p:UseAppHost=true -p:HeapLensBuildRoot="$root/$tfm/")
export DOTNET_CLI_TELEMETRY_OPTOUT=1 DOTNET_NOLOGO=1
dotnet restore "$csproj" -r linux-x64 "${config[@]}" "${props[@]}" -v quiet
dotnet publish "$csproj" --no-restore -c Release -r linux-x64 --self-contained "${props[@]}" \
    -o "$out" --nologo -v quiet
