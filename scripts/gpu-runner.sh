#!/usr/bin/env bash
# Runner for the GPU bundle (copied to bundle/run.sh by scripts/bundle.sh).
# Runs on a machine with an NVIDIA GPU and driver; needs no Rust.
#
#   ./run.sh OUT_DIR [--bench | --bench-quick] [--sanitize] [--skip-tests] [--skip-examples]
#
#   default        every test binary (none may skip: COALESCE_EXPECT_GPU=1)
#                  and every example with its short defaults
#   --bench        also `coalesce bench <suite>` for every suite (full sweeps)
#   --bench-quick  the same with --quick
#   --ncu          also every Nsight Compute script in ncu/ (counters per
#                  suite; each writes CSVs under OUT_DIR/ncu)
#   --sanitize     also compute-sanitizer memcheck, racecheck, synccheck and
#                  initcheck (with COALESCE_UNDER_SANITIZER=1, which shrinks the
#                  tests' largest inputs; see tests/common) 
#                  initcheck over the test binaries (sticky_error and
#                  streaming_fault, which fault on purpose, and sass, which uses no GPU, excluded),
#                  $SANITIZE_JOBS at a time (default 8), each limited to
#                  $SANITIZE_TIMEOUT seconds (default 1200; on an H100,
#                  racecheck over the `copy` binary has taken from 136 s
#                  to more than 500 s, the other jobs under 140 s)
#
# Environment: TESTS, EXAMPLES, SUITES (space-separated names) restrict the
# test binaries (and sanitizer jobs), examples and bench suites run;
# SANITIZE_TOOLS (default "memcheck racecheck synccheck initcheck").
#
# Writes logs, JSON and plots under OUT_DIR and OUT_DIR/summary.txt; exits
# non-zero if anything failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: run.sh OUT_DIR [--bench|--bench-quick] [--sanitize] [--skip-tests] [--skip-examples]}
shift
bench= sanitize= tests=1 examples=1 ncu=
for a in "$@"; do
  case "$a" in
    --bench) bench=full ;;
    --bench-quick) bench=quick ;;
    --sanitize) sanitize=1 ;;
    --ncu) ncu=1 ;;
    --skip-tests) tests= ;;
    --skip-examples) examples= ;;
    *) echo "run.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"/{tests,examples,sanitizer,bench,ncu}

selected() { # list name: true when the list is empty or names it
  [ -z "$1" ] && return 0
  case " $1 " in *" $2 "*) return 0 ;; esac
  return 1
}
out=$(cd "$out" && pwd)
export COALESCE_EXPECT_GPU=1
export PATH="$PATH:/usr/local/cuda/bin"
summary="$out/summary.txt"
: >"$summary"
failed=0

record() { # status name seconds detail
  printf '%-5s %-48s %6ss  %s\n' "$1" "$2" "$3" "$4" | tee -a "$summary"
  [ "$1" = PASS ] || failed=1
}

verdict() { # name log rc seconds
  local name=$1 log=$2 rc=$3 dt=$4 detail
  detail=$(grep -E '^test result:|ERROR SUMMARY|goal ' "$log" | tail -n 3 | tr '\n' ' ')
  if [ "$rc" -ne 0 ]; then
    record FAIL "$name" "$dt" "exit $rc $detail"
  elif grep -q 'skipped: no CUDA device' "$log"; then
    record FAIL "$name" "$dt" "a test skipped for lack of a device"
  else
    record PASS "$name" "$dt" "$detail"
  fi
}

run_logged() { # name log cmd...
  local name=$1 log=$2; shift 2
  local t0=$SECONDS rc
  "$@" >"$log" 2>&1
  rc=$?
  verdict "$name" "$log" "$rc" $((SECONDS - t0))
}

{
  echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
  command -v compute-sanitizer ncu ptxas cuobjdump 2>&1
  "$here/bin/coalesce" info 2>&1
} >"$out/environment.txt"

if [ -n "$tests" ]; then
  for t in "$here"/tests/*; do
    n=$(basename "$t")
    selected "${TESTS:-}" "$n" || continue
    run_logged "test $n" "$out/tests/$n.log" "$t"
  done
fi

if [ -n "$examples" ]; then
  for e in "$here"/examples/*; do
    n=$(basename "$e")
    selected "${EXAMPLES:-}" "$n" || continue
    mkdir -p "$out/examples/$n"
    # Each example runs in its own folder, so any files it writes land there.
    run_logged "example $n" "$out/examples/$n.log" bash -c 'cd "$1" && exec "$2"' _ "$out/examples/$n" "$e"
  done
fi

if [ -n "$bench" ]; then
  flag=; [ "$bench" = quick ] && flag=--quick
  for suite in $("$here/bin/coalesce" bench list 2>/dev/null); do
    selected "${SUITES:-}" "$suite" || continue
    run_logged "bench $suite" "$out/bench/$suite.log" "$here/bin/coalesce" bench "$suite" $flag --out "$out/bench"
  done
  if selected "${SUITES:-}" copy; then
    # The copy lesson once more with the lesson's own launch (256 threads, one wave).
    mkdir -p "$out/bench/lesson-launch"
    run_logged "bench copy --lesson-launch" "$out/bench/copy-lesson-launch.log" \
      "$here/bin/coalesce" bench copy --lesson-launch $flag --out "$out/bench/lesson-launch"
  fi
fi

if [ -n "$ncu" ]; then
  for script in "$here"/ncu/*.sh; do
    n=$(basename "$script" .sh)
    selected "${SUITES:-}" "$n" || continue
    run_logged "ncu $n" "$out/ncu/$n.log" bash "$script" "$here" "$out/ncu"
  done
fi

if [ -n "$sanitize" ]; then
  if ! command -v compute-sanitizer >/dev/null; then
    record FAIL "compute-sanitizer" 0 "not found"
  else
    jobs=() # "tool bin"
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
      for t in "$here"/tests/*; do
        n=$(basename "$t")
        case "$n" in sticky_error|streaming_fault|sass|sass_*|lib-*|bin-*) continue ;; esac
        selected "${TESTS:-}" "$n" || continue
        jobs+=("$tool $n")
      done
    done
    # Each job records its exit status and duration next to its log.
    printf '%s\n' "${jobs[@]}" | xargs -P "${SANITIZE_JOBS:-8}" -L 1 bash -c '
      tool=$0 n=$1 log="'"$out"'/sanitizer/$0-$1.log" t0=$SECONDS
      COALESCE_UNDER_SANITIZER=1 timeout "${SANITIZE_TIMEOUT:-1200}" compute-sanitizer --tool "$tool" --error-exitcode 1 \
        "'"$here"'/tests/$n" --test-threads=4 >"$log" 2>&1
      echo "$? $((SECONDS - t0))" >"$log.status"'
    for j in "${jobs[@]}"; do
      set -- $j
      log="$out/sanitizer/$1-$2.log"
      read -r rc dt <"$log.status" || { rc=1; dt=0; }
      rm -f "$log.status"
      verdict "$1 $2" "$log" "$rc" "$dt"
    done
  fi
fi

echo
if [ $failed -eq 0 ]; then echo "ALL PASSED" | tee -a "$summary"; else echo "FAILURES (see $summary)" | tee -a "$summary"; fi
exit $failed
