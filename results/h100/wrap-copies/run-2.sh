#!/usr/bin/env bash
# Wrap mode's ghost cells from the copies (b5) against the kernels before (b4: ad9f36d): 2D bench in every mode.
export PATH=$PATH:/usr/local/cuda/bin
for B in gpu-x/b4 gpu-x/b5; do
  [ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
done
N=gpu-x/b5/unpacked/bin/coalesce; O=gpu-x/b4/unpacked/bin/coalesce
A="--only-2d --masks-2d 3,5,7,9,11,13 --separable-2d 17 --gaussians-2d 2"
t0=$SECONDS
show() { grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD" $1 | awk '{print $1, $4, $5, $7}' | tr '\n' ';'; echo; }
for i in 1 2; do
  for B in b4 b5; do
    timeout 90 gpu-x/$B/unpacked/bin/coalesce bench conv $A --mode wrap --no-twins > $OUT/wrap-$B-$i.txt 2>&1; echo "== wrap $B $i rc=$? $((SECONDS-t0)) s"; show $OUT/wrap-$B-$i.txt
  done
done
for i in 1 2; do
  for B in b4 b5; do
    timeout 90 gpu-x/$B/unpacked/bin/coalesce bench conv $A --no-twins > /tmp/zero-$B-$i.txt 2>&1; echo "== zero $B $i rc=$? $((SECONDS-t0)) s"; show /tmp/zero-$B-$i.txt
  done
done
cat /tmp/zero-*.txt > $OUT/zero-ab.txt
echo "total $SECONDS s"
