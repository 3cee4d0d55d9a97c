#!/bin/bash
# call A: every non-SASS test binary (none may skip), then stress
cd "$(dirname "$0")/bundle"
T="access batch channels cli_filter concurrency constant conv1d conv2d conv2d_streamed conv2d_tensor conv_tensor copy device_support divergence errors matrix occupancy pitched properties reduce scipy_params scipy_params2d sticky_error streaming streaming_fault texture transfer transpose lib-coalesce lib-coalesce_host lib-coalesce_kernels bin-coalesce"
TESTS="$T" timeout 540 ./run.sh /tmp/r --skip-examples > /tmp/r.log 2>&1; echo "runner rc=$?" >> /tmp/r.log
cp /tmp/r/summary.txt $OUT/tests-summary.txt 2>/dev/null
tail -5 /tmp/r.log > $OUT/runner-tail.txt
tar czf $OUT/logs.tgz -C /tmp r 2>/dev/null
cat $OUT/tests-summary.txt; cat $OUT/runner-tail.txt
