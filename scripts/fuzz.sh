#!/usr/bin/env bash
# Usage: scripts/fuzz.sh [SECONDS] [BUILD_DIR]
# Runs each libFuzzer target of fuzz/ (built by the `asan` preset into
# BUILD_DIR, default build/asan) for SECONDS (default 60) on a copy of its
# seed corpus in a temporary directory: the repository is never written to.
# Targets run side by side, one per CPU (FUZZ_JOBS sets how many).
# Prints, per target, the seconds run, the executions, the corpus size at the
# end and the result. Fails (exit 1) if any target crashed, leaked, timed out
# or ran out of memory; the input that did it is copied to
# BUILD_DIR/fuzz/artifacts/<target>/ and the fuzzer's report is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
build="${2:-build/asan}"
targets=(http_request resp blob_header log_replay)

if [[ ! "$seconds" =~ ^[0-9]+$ ]]; then
  echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2
  exit 2
fi
for t in "${targets[@]}"; do
  if [[ ! -x "$build/fuzz/spindle_fuzz_$t" ]]; then
    echo "fuzz.sh: $build/fuzz/spindle_fuzz_$t missing:" \
      "cmake --preset asan && cmake --build --preset asan" >&2
    exit 2
  fi
done
build="$(cd "$build" && pwd)"
# On tmpfs when there is one: log_replay fsyncs its scratch blobs per input.
if [[ -z "${TMPDIR:-}" && -d /dev/shm && -w /dev/shm ]]; then
  tmp="$(mktemp -d /dev/shm/spindle-fuzz.XXXXXX)"
else
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/spindle-fuzz.XXXXXX")"
fi
trap 'rm -rf "$tmp"' EXIT

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Runs target $1 into $tmp/$1/: its log, and a one-line result in "result".
fuzz_one() {
  local t="$1" dir="$tmp/$1" rc=0 begin ran execs size result
  mkdir -p "$dir/corpus" "$dir/artifacts" "$dir/scratch"
  cp -R "fuzz/corpus/$t/." "$dir/corpus/"
  local extra=()
  # Log::open reports every torn tail and corrupt log on stderr: keep the
  # fuzzer's own output readable (crash reports still get through).
  [[ "$t" == log_replay ]] && extra+=(-close_fd_mask=2)
  begin=$(date +%s)
  # TMPDIR: where a target keeps scratch files (log_replay's Storage directory).
  TMPDIR="$dir/scratch" "$build/fuzz/spindle_fuzz_$t" "$dir/corpus" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    ${extra[@]+"${extra[@]}"} >"$dir/log" 2>&1 || rc=$?
  ran=$(( $(date +%s) - begin ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$dir/log" | tail -n 1)
  if [[ -z "$execs" ]]; then  # no final stats after a crash: the last status line
    execs=$(grep -o '^#[0-9]*' "$dir/log" | tail -n 1 | tr -d '#') || execs=""
  fi
  size=$(find "$dir/corpus" -type f | wc -l)
  if [[ $rc -eq 0 ]] &&
    ! grep -qE '^==[0-9]+==ERROR|runtime error:|fuzz invariant failed' "$dir/log"; then
    result=ok
  else
    result="FAILED (exit $rc)"
  fi
  printf '%-14s %8s %12s %8s  %s\n' "$t" "$ran" "${execs:-?}" "$size" "$result" >"$dir/result"
}

# As many targets at once as there are CPUs (FUZZ_JOBS overrides).
parallel="${FUZZ_JOBS:-$(nproc)}"
for t in "${targets[@]}"; do
  while (( $(jobs -rp | wc -l) >= parallel )); do wait -n || true; done
  fuzz_one "$t" &
done
wait

failed=()
printf '%-14s %8s %12s %8s  %s\n' target seconds executions corpus result
for t in "${targets[@]}"; do
  dir="$tmp/$t"
  [[ -f "$dir/result" ]] || printf '%-14s  FAILED (no result)\n' "$t" >"$dir/result"
  cat "$dir/result"
  if ! grep -q ' ok$' "$dir/result"; then
    failed+=("$t")
    mkdir -p "$build/fuzz/artifacts/$t"
    cp -R "$dir/artifacts/." "$build/fuzz/artifacts/$t/"
    echo "--- $t: the fuzzer's report (inputs kept in $build/fuzz/artifacts/$t/):"
    tail -n 60 "$dir/log"
    echo "---"
  fi
done
if ((${#failed[@]})); then
  echo "fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: all ${#targets[@]} targets ran ${seconds} s each without a finding"
