#!/usr/bin/env bash
# The bands build (gpu-x/b6): the 2D tests, the concurrency tests and stress, examples, and compute-sanitizer over the
# register kernels' tests (the new band test included).
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b6
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
T=$B/unpacked/tests
export COALESCE_EXPECT_GPU=1
mkdir -p $OUT/tests
for tool in memcheck racecheck synccheck initcheck; do
  COALESCE_UNDER_SANITIZER=1 timeout 500 compute-sanitizer --tool $tool --error-exitcode 1 $T/conv2d register_kernels --test-threads=1 > $OUT/tests/san-$tool.txt 2>&1 &
done
for t in conv2d conv2d_tensor channels conv2d_streamed scipy_params2d errors concurrency cli_filter batch pitched lib-coalesce_host lib-coalesce_kernels lib-coalesce; do
  t0=$SECONDS; timeout 200 $T/$t > /tmp/test-$t.txt 2>&1; rc=$?
  echo "test $t rc=$rc $((SECONDS-t0)) s: $(grep -E '^test result' /tmp/test-$t.txt | tail -1) skipped=$(grep -ci 'skipped' /tmp/test-$t.txt)"
  [ $rc = 0 ] || tail -30 /tmp/test-$t.txt
done
for e in conv2d_blur resize; do
  t0=$SECONDS; timeout 60 $B/unpacked/examples/$e > /tmp/ex-$e.txt 2>&1; echo "example $e rc=$? $((SECONDS-t0)) s"; tail -2 /tmp/ex-$e.txt
done
timeout 90 $B/unpacked/bin/coalesce stress --seconds 40 --threads 8 > $OUT/tests/stress.txt 2>&1; echo "stress rc=$?: $(tail -3 $OUT/tests/stress.txt | tr '\n' ' ')"
cat /tmp/test-*.txt /tmp/ex-*.txt > $OUT/tests/tests-all.txt
wait
for tool in memcheck racecheck synccheck initcheck; do echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $OUT/tests/san-$tool.txt | tr '\n' ' ')"; done
echo "total $SECONDS s"
