#!/usr/bin/env bash
# Wrap mode's ghost cells from the copies (b5): the conv2d-related tests, examples, sanitizers over the register kernels' test.
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b5
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
T=$B/unpacked/tests
export COALESCE_EXPECT_GPU=1
for tool in memcheck racecheck synccheck initcheck; do
  COALESCE_UNDER_SANITIZER=1 timeout 400 compute-sanitizer --tool $tool --error-exitcode 1 $T/conv2d register_kernels --test-threads=1 > $OUT/san-$tool.txt 2>&1 &
done
for t in conv2d conv2d_tensor channels conv2d_streamed scipy_params2d errors concurrency cli_filter batch streaming pitched divergence lib-coalesce_host lib-coalesce_kernels lib-coalesce; do
  t0=$SECONDS; timeout 150 $T/$t > /tmp/test-$t.txt 2>&1; rc=$?
  echo "test $t rc=$rc $((SECONDS-t0)) s: $(grep -E '^test result' /tmp/test-$t.txt | tail -1) skipped=$(grep -ci 'skipped' /tmp/test-$t.txt)"
  [ $rc = 0 ] || tail -30 /tmp/test-$t.txt
done
for e in conv2d_blur resize; do
  t0=$SECONDS; timeout 60 $B/unpacked/examples/$e > /tmp/ex-$e.txt 2>&1; echo "example $e rc=$? $((SECONDS-t0)) s"; tail -2 /tmp/ex-$e.txt
done
cat /tmp/test-*.txt /tmp/ex-*.txt > $OUT/tests-all.txt
wait
for tool in memcheck racecheck synccheck initcheck; do echo "$tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $OUT/san-$tool.txt | tr '\n' ' ')"; done
echo "total $SECONDS s"
