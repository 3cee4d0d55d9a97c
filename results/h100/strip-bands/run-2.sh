#!/usr/bin/env bash
# The register kernels in one wave of bands (gpu-x/b6, this tree) against the committed kernels (gpu-x/base, the
# coalesce binary of d5ccc9c): the 2D bench in zero and reflect modes, in turns, then the new build with its C++ twins.
export PATH=$PATH:/usr/local/cuda/bin
B=gpu-x/b6
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
[ -x /tmp/base-coalesce ] || xz -dc gpu-x/base/coalesce.xz > /tmp/base-coalesce && chmod +x /tmp/base-coalesce
N=$B/unpacked/bin/coalesce; O=/tmp/base-coalesce
A="--only-2d --masks-2d 3,5,7,9,11,13 --separable-2d 17 --gaussians-2d 2"
t0=$SECONDS
show() { grep -E "^[0-9]+x[0-9]+ .* fast |^cuMemcpyDtoD" $1 | awk '{print $1, $4, $5, $7}' | tr '\n' ';'; echo; }
mkdir -p $OUT/bench
for i in 1 2; do
  for mode in zero reflect; do
    for b in base new; do
      X=$N; [ $b = base ] && X=$O
      timeout 90 $X bench conv $A --mode $mode --no-twins > $OUT/bench/$mode-$b-$i.txt 2>&1
      echo "== $mode $b $i rc=$? $((SECONDS-t0)) s"; show $OUT/bench/$mode-$b-$i.txt
    done
  done
done
timeout 200 $N bench conv --only-2d --masks-2d 3,5,7,9,11,13 > $OUT/bench/twins-new.txt 2>&1
echo "== twins rc=$? $((SECONDS-t0)) s"; grep -E "^[0-9]+x[0-9]+ |twin|Rust|^cuMemcpyDtoD|goal" $OUT/bench/twins-new.txt | head -60
