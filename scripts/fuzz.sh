#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang in build-fuzz/ and runs each
# for SECONDS (60) on a copy of its committed corpus. Fails on any crash, leak,
# timeout or failed check; the input that did it is in build-fuzz/artifacts/.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
seconds="${1:-60}"
build=build-fuzz
# Every fuzz/fuzz_*.c is a target; fuzz/<target>.dict, if present, replaces steerd.dict.
targets=()
for src in fuzz/fuzz_*.c; do
  t=$(basename "$src" .c)
  targets+=("$t")
done

cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTEERD_FUZZ=ON \
  -DSTEERD_LTO=OFF >/dev/null
cmake --build "$build" --target "${targets[@]}" -j"$(nproc)"

# Runs share the cores; each gets its own copy of the corpus (new entries stay
# in build-fuzz/corpus/; see fuzz/README.md to merge them into the committed one).
pids=()
for t in "${targets[@]}"; do
  rm -rf "$build/corpus/$t" "$build/artifacts/$t"
  mkdir -p "$build/corpus/$t" "$build/artifacts/$t" "$build/logs"
  cp fuzz/corpus/"$t"/* "$build/corpus/$t/"
  dict=fuzz/steerd.dict
  if [ -f "fuzz/$t.dict" ]; then dict="fuzz/$t.dict"; fi
  "$build/fuzz/$t" "$build/corpus/$t" -dict="$dict" -max_len=16384 -timeout=10 \
    -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$build/artifacts/$t/" \
    >"$build/logs/$t.log" 2>&1 &
  pids+=($!)
done

failed=0
for i in "${!targets[@]}"; do
  t="${targets[$i]}"
  if wait "${pids[$i]}"; then status=ok; else status=FAILED; failed=1; fi
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$build/logs/$t.log" | tail -n 1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/logs/$t.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$build/logs/$t.log")
  cov=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\).*/cov \1 ft \2/p' <<<"$done_line")
  printf 'fuzz: %-16s %-6s %ss, %s execs (%s/s), %s, corpus %s files\n' "$t" "$status" "$seconds" \
    "${execs:-?}" "${rate:-?}" "${cov:-cov ?}" "$(ls "$build/corpus/$t" | wc -l)"
  if [ "$status" != ok ]; then
    grep -E 'ERROR|SUMMARY|fuzz check failed|Test unit written' "$build/logs/$t.log" | head -n 20 || true
    echo "fuzz: full log in $build/logs/$t.log; reproduce with: $build/fuzz/$t <artifact>"
  fi
done
exit "$failed"
