#!/usr/bin/env bash
# Zero mode, the kernels before (b3: 7602925's kernels) and after (b4: this change), interleaved twice.
for B in gpu-x/b3 gpu-x/b4; do mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz; done; for i in 1 2; do for B in b3 b4; do timeout 60 gpu-x/$B/unpacked/bin/coalesce bench conv --only-2d --masks-2d 7,9,11,13 --separable-2d 17 --gaussians-2d 2 --no-twins > $OUT/ab-$B-$i.txt 2>&1; echo "== $B $i"; grep -E "^[0-9]+x[0-9]+ .* fast " $OUT/ab-$B-$i.txt | awk '{print $1, $5, $7}' | tr '\n' ' '; echo; done; done
