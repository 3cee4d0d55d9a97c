#!/bin/bash
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/cuda/bin
L=/tmp/fastncu; mkdir -p $L
mkdir -p new old && tar -xJf b.tar.xz -C new && tar -xJf old.tar.xz -C old
for b in old new; do
  timeout 250 ncu -k regex:conv1d_fast_f32 --launch-skip 2 -c 1 --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats --section InstructionStats \
    ./$b/t/coalesce bench conv --only-1d --widths 255 --lengths 2^27 --variants fast --no-twins --warmup 3 --reps 2 > $L/ncu-$b.txt 2>&1
  echo "$b rc=$?" >> $L/rc.txt
done
cat $L/rc.txt
cd /tmp && tar -cJf $OUT/fastncu.tar.xz fastncu
