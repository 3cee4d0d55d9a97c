#!/usr/bin/env bash
# A/B on one machine: 4a378e1 (b) against this change (b2), strip kernels 7..13, zero mode, interleaved.
for B in gpu-x/b gpu-x/b2; do
  [ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
done
for i in 1 2; do
for v in b b2; do
  timeout 100 gpu-x/$v/unpacked/bin/coalesce bench conv --only-2d --masks-2d 5,7,9,11,13 --separable-2d 17 --gaussians-2d 2 --no-twins > $OUT/ab-$v-$i.txt 2>&1
  echo "== $v $i"; grep -E "fast  " $OUT/ab-$v-$i.txt
done
done
