#!/usr/bin/env bash
# The long soaks: what CI's case counts are too small to catch. Not part of
# scripts/test-all.sh (6–12 minutes on a 2-core machine); run it nightly, or before a
# release, or after any change to the IVM, the write plane or the host.
#
#   scripts/soak.sh                    # every soak below, the differential on today's seed
#   SOAK_SEED=8080 scripts/soak.sh     # the differential on a chosen seed
#
# It runs, in release builds:
#   1. the property suites of the cross-face tests (the IVM oracle, windows, the write
#      plane against its reference model, crash replay) at SOAK_CASES cases each;
#   2. the room host's random input sequences (host_prop) at SOAK_HOST_CASES cases, then
#      a fifth as many sessions of up to SOAK_HOST_STEPS steps (CI's are up to 60);
#   3. the differential soak of the Node face against the published @rindle/room 0.9.0
#      (bindings-node/test/differential) for SOAK_CALLS calls from SOAK_SEED.
#
# Environment: SOAK_CASES (100000), SOAK_HOST_CASES (100000), SOAK_HOST_STEPS (250),
# SOAK_CALLS (400000),
# SOAK_SEED (default: today's date as YYYYMMDD, so each night explores new sequences),
# SOAK_SKIP_DIFFERENTIAL=1 (skip step 3, which needs npm and the registry).
#
# A failing property prints its shrunk case and proptest records its seed under
# proptest-regressions/ (commit it with the fix: it is replayed by every later run).
# A failing differential class prints its shrunk repro; save it with `--out` and see
# bindings-node/test/differential/README.md for what to do with it. The script exits
# non-zero when any step failed, after running them all.
set -uo pipefail
cd "$(dirname "$0")/.."

cases="${SOAK_CASES:-100000}"
host_cases="${SOAK_HOST_CASES:-100000}"
host_steps="${SOAK_HOST_STEPS:-250}"
calls="${SOAK_CALLS:-400000}"
seed="${SOAK_SEED:-$(date -u +%Y%m%d)}"
for v in "$cases" "$host_cases" "$host_steps" "$calls" "$seed"; do
  case "$v" in
    '' | *[!0-9]*)
      echo "soak.sh: SOAK_CASES, SOAK_HOST_CASES, SOAK_HOST_STEPS, SOAK_CALLS and SOAK_SEED must be whole numbers (got '$v')" >&2
      exit 2
      ;;
  esac
done

step() { printf '\n==> %s\n' "$*"; }
failed=()
run() {
  local name="$1"
  shift
  local t0=$SECONDS
  if "$@"; then
    echo "-- $name: passed in $((SECONDS - t0)) s"
  else
    echo "-- $name: FAILED after $((SECONDS - t0)) s" >&2
    failed+=("$name")
  fi
}

step "property suites at $cases cases (release): oracle, windows, write_model, crash_replay"
run "property suites" env PROPTEST_CASES="$cases" cargo test --release --locked \
  -p rindle-room-tests --test oracle --test windows --test write_model --test crash_replay

step "room host random sequences at $host_cases cases (release): host_prop"
run "host_prop" env PROPTEST_CASES="$host_cases" cargo test --release --locked \
  -p rindle-room-tests --test host_prop
step "room host long sessions: $((host_cases / 5)) cases of up to $host_steps steps (release)"
run "host_prop (long sessions)" env HOST_PROP_STEPS="$host_steps" \
  PROPTEST_CASES="$((host_cases / 5))" cargo test --release --locked \
  -p rindle-room-tests --test host_prop

if [ "${SOAK_SKIP_DIFFERENTIAL:-}" = 1 ]; then
  step "differential soak: skipped (SOAK_SKIP_DIFFERENTIAL=1)"
else
  step "differential soak against @rindle/room 0.9.0: $calls calls from seed $seed (release addon)"
  run "differential (seed $seed)" bash -c '
    set -euo pipefail
    cd bindings-node
    if [ ! -d node_modules/@rindle/room ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
      npm ci --no-audit --no-fund
    fi
    npm run --silent build
    RINDLE_ROOM_NATIVE_BUILD=release node test/differential/run.mjs --calls "$1" --seed "$2"
  ' soak "$calls" "$seed"
fi

if [ ${#failed[@]} -gt 0 ]; then
  printf '\nsoak.sh: %d step(s) failed: %s\n' "${#failed[@]}" "$(IFS=,; echo "${failed[*]}")" >&2
  exit 1
fi
printf '\nsoak.sh: every soak passed (%d s)\n' "$SECONDS"
