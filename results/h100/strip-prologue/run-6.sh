#!/usr/bin/env bash
# Run from the repository root with the release bundle (scripts/bundle.sh) of this change in gpu-x/b3: the conv2d-related
# tests, the sanitizers over the register kernels' test, the 2D bench (3x3-13x13 with twins, zero mode), then reflect mode.
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b3
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
T=$B/unpacked/tests
export COALESCE_EXPECT_GPU=1
for t in conv2d conv2d_tensor channels conv2d_streamed scipy_params2d errors concurrency lib-coalesce_host lib-coalesce_kernels lib-coalesce; do
  t1=$SECONDS; timeout 90 $T/$t > $OUT/test-$t.txt 2>&1; rc=$?
  echo "test $t rc=$rc $((SECONDS-t1)) s: $(grep -E '^test result' $OUT/test-$t.txt | tail -1) skipped=$(grep -c 'skipped' $OUT/test-$t.txt)"
done
t1=$SECONDS
for tool in memcheck racecheck synccheck initcheck; do
  COALESCE_UNDER_SANITIZER=1 timeout 200 compute-sanitizer --tool $tool --error-exitcode 1 $T/conv2d register_kernels --test-threads=1 > $OUT/san-$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck synccheck initcheck; do echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $OUT/san-$tool.txt | tr '\n' ' ')"; done
echo "sanitizers $((SECONDS-t1)) s, total $SECONDS s"
t0=$SECONDS
timeout 200 $B/unpacked/bin/coalesce bench conv --only-2d --masks-2d 3,5,7,9,11,13 --separable-2d 17 --gaussians-2d 2 > $OUT/bench-2d.txt 2>&1
echo "bench rc=$? $((SECONDS-t0)) s"
grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD|goal" $OUT/bench-2d.txt | head -40
t0=$SECONDS
timeout $((540 - SECONDS)) $B/unpacked/bin/coalesce bench conv --only-2d --masks-2d 3,5,7,9,11,13 --separable-2d 17 --gaussians-2d 2 --mode reflect --no-twins > $OUT/bench-2d-reflect.txt 2>&1
echo "reflect rc=$? $((SECONDS-t0)) s, total $SECONDS s"
grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD" $OUT/bench-2d-reflect.txt | head -20
