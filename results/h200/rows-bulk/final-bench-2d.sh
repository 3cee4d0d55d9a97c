#!/bin/bash
cd "$(dirname "$0")"
xz -d -c new.xz > new && chmod +x new
./new bench conv --no-twins --only-2d --image-2d 8192 --masks-2d 3,5,7,9 --separable-2d 15,17,21,31 --gaussians-2d 2,5 > $OUT/bench-2d.txt 2>&1; echo "rc=$?" >> $OUT/bench-2d.txt
