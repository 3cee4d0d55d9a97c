#!/bin/bash
cd "$(dirname "$0")"
R=$PWD/res; mkdir -p $R
B=../bundle
T0=$(date +%s)
export COALESCE_EXPECT_GPU=1
export TESTS="scipy_params scipy_params2d sticky_error streaming streaming_fault texture transfer transpose"
timeout 170 $B/run.sh $R/bundle --skip-examples > $R/bundle-run.txt 2>&1; echo "bundle rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
cp $R/rc.txt $OUT/
cat $R/bundle/summary.txt > $OUT/summary.txt 2>/dev/null
tar cJf $OUT/res.tar.xz -C $R --exclude=bundle/unpacked .
