#!/usr/bin/env bash
# Run from the repository root with the release bundle (scripts/bundle.sh) in gpu-x/b. Call 1: the 2D bench (3x3-15x15 with twins), the conv2d-related tests, then the sanitizers
# over the register kernels' test.
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
T=$B/unpacked/tests
t0=$SECONDS
timeout 230 $B/unpacked/bin/coalesce bench conv --only-2d --masks-2d 3,5,7,9,11,13,15 --separable-2d 17 --gaussians-2d 2 > $OUT/bench-2d.txt 2>&1
echo "bench rc=$? $((SECONDS-t0)) s"
grep -E "^[0-9]+x[0-9]+ |^cuMemcpyDtoD|goal" $OUT/bench-2d.txt | head -80
export COALESCE_EXPECT_GPU=1
for t in conv2d conv2d_tensor channels lib-coalesce_host lib-coalesce_kernels; do
  t1=$SECONDS; timeout 90 $T/$t > $OUT/test-$t.txt 2>&1; rc=$?
  echo "test $t rc=$rc $((SECONDS-t1)) s: $(grep -E '^test result' $OUT/test-$t.txt | tail -1) skipped=$(grep -c 'skipped' $OUT/test-$t.txt)"
done
t1=$SECONDS
for tool in memcheck racecheck synccheck initcheck; do
  COALESCE_UNDER_SANITIZER=1 timeout $((560 - SECONDS)) compute-sanitizer --tool $tool --error-exitcode 1 $T/conv2d register_kernels --test-threads=1 > $OUT/san-$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck synccheck initcheck; do echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $OUT/san-$tool.txt | tr '\n' ' ')"; done
echo "sanitizers $((SECONDS-t1)) s, total $SECONDS s"
