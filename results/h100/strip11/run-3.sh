#!/usr/bin/env bash
# Every test binary (none may skip) and every example from the bundle.
export PATH=$PATH:/usr/local/cuda/bin
bash gpu-x/b/run.sh $OUT/all > $OUT/run.txt 2>&1
echo "rc=$?"; tail -50 $OUT/all/summary.txt
