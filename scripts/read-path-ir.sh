#!/bin/sh
# Instructions (callgrind Ir) per change of read_path configurations: deterministic, so
# two builds compare on a noisy machine. Usage:
#   scripts/read-path-ir.sh <read_path bench binary> ["W1 N=10k typed" ...]
# Prints "label | Ir per unit". With no labels, the W1 and W3 configurations.
set -eu
bin=$1
shift
if [ $# -eq 0 ]; then
  set -- "W1 N=10k typed" "W1 N=10k json" "W1 N=100k typed" "W1 N=100k json" \
    "W3 Q=10 hit typed" "W3 Q=10 miss typed" "W3 Q=10 hit json" "W3 Q=10 miss json" \
    "W3 Q=1000 hit typed" "W3 Q=1000 miss typed" "W3 Q=1000 hit json" "W3 Q=1000 miss json"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for label in "$@"; do
  READ_PATH_FILTER="$label" READ_PATH_REPS=1 READ_PATH_REP_MS=20 \
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
    --toggle-collect='*Subject::step*' "$bin" --bench >"$out/log" 2>"$out/err"
  ir=$(grep -E '^summary:|^totals:' "$out/cg" | head -1 | awk '{print $2}')
  units=$(grep -F "| $label | " "$out/log" | tail -1 | awk -F'|' '{gsub(/ /,"",$3); print $3}')
  echo "$label | $(( ir / units ))"
done
