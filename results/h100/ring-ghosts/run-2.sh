#!/usr/bin/env bash
# Ring ghost cells (b4) against the kernels before (b3): 2D bench, zero and reflect with twins, mirror/nearest/wrap.
export PATH=$PATH:/usr/local/cuda/bin
for B in gpu-x/b3 gpu-x/b4; do
  [ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
done
N=gpu-x/b4/unpacked/bin/coalesce; O=gpu-x/b3/unpacked/bin/coalesce
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt
A="--only-2d --masks-2d 3,5,7,9,11,13 --separable-2d 17 --gaussians-2d 2"
t0=$SECONDS
timeout 150 $N bench conv $A --mode reflect > $OUT/bench-2d-reflect.txt 2>&1; echo "reflect rc=$? $((SECONDS-t0)) s"
grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD|twin" $OUT/bench-2d-reflect.txt | head -30
timeout 150 $N bench conv $A > $OUT/bench-2d-zero.txt 2>&1; echo "zero rc=$? $((SECONDS-t0)) s"
grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD|twin" $OUT/bench-2d-zero.txt | head -30
for m in reflect zero; do
  timeout 60 $O bench conv --only-2d --masks-2d 7,9,11,13 --separable-2d 17 --gaussians-2d 2 --mode $m --no-twins > $OUT/before-$m.txt 2>&1
  echo "before $m rc=$? $((SECONDS-t0)) s"; grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD" $OUT/before-$m.txt
done
for m in mirror nearest wrap; do
  timeout 60 $N bench conv --only-2d --masks-2d 3,5,7,9,11,13 --separable-2d 17 --gaussians-2d 2 --mode $m --no-twins > $OUT/bench-2d-$m.txt 2>&1
  echo "$m rc=$? $((SECONDS-t0)) s"; grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD" $OUT/bench-2d-$m.txt
done
echo "total $SECONDS s"
