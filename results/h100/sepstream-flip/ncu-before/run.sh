export PATH=$PATH:/usr/local/cuda/bin
cd "$(dirname "$0")"  # with the release `coalesce` binary of 8ae925e beside it
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
./coalesce bench conv --only-2d --image-2d 8192 --masks-2d 3 --separable-2d 11,13,15,17 --gaussians-2d 2 --no-twins > $OUT/bench.log 2>&1
grep -i "sep\|floor" $OUT/bench.log | head -30
for h in 5 6 7 8; do
  w=$((2*h+1))
  timeout 240 ncu -k regex:conv2d_seps_f32_h${h}\$ --launch-skip 3 --launch-count 1 --set full ./coalesce bench conv --only-2d --image-2d 8192 --masks-2d 3 --separable-2d $w --gaussians-2d 2 --no-twins --warmup 2 --reps 5 > $OUT/ncu-h$h.txt 2>&1
  echo "h$h rc=$?"
done
ls -la $OUT
