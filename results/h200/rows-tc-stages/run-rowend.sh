#!/bin/bash
cd "$(dirname "$0")"
xz -d -c base.xz > c && chmod +x c
for r in 1 2; do ./c bench conv --no-twins --only-batch --batch "64x2^21@7,256x2^19@7,1024x2^17@7,4096x2^15@7" --dtype bf16,f32 --channels 1 > $OUT/rowend-$r.txt 2>&1; done
grep -h "w=7 " $OUT/rowend-*.txt | grep conv1d
