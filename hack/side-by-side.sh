#!/usr/bin/env bash
# Runs commands side by side and prints each one's output whole, with its
# exit status and time, when all have ended; exits with the first failure's
# status. Used by make test to overlap tiers that mostly wait on timers.
# Usage: hack/side-by-side.sh "name" "command" ["name" "command" ...]
set -uo pipefail
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
names=() pids=() start=$(date +%s)
i=0
while [ $# -ge 2 ]; do
  names+=("$1")
  ( s=$(date +%s); bash -o pipefail -c "$2"; rc=$?; echo "$rc $(( $(date +%s) - s ))" >"$out/$i.rc"; exit $rc ) >"$out/$i.log" 2>&1 &
  pids+=($!)
  shift 2; i=$((i+1))
done
status=0
for j in "${!pids[@]}"; do
  wait "${pids[$j]}"
  read -r rc secs <"$out/$j.rc" || { rc=1 secs=?; }
  echo "=== ${names[$j]}: exit $rc, ${secs}s"
  cat "$out/$j.log"
  [ "$status" -eq 0 ] && [ "$rc" -ne 0 ] && status=$rc
done
echo "=== side by side: $(( $(date +%s) - start ))s"
exit "$status"
