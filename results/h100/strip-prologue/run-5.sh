#!/usr/bin/env bash
# Which of the three changes slows 9x9: a = extra copy branched, b = prologue as a loop, c = no zero-mode edge relaxation.
B=gpu-x/b2
[ -x $B/unpacked/bin/coalesce ] || { mkdir -p $B/unpacked && tar -C $B/unpacked -xJf $B/bundle.tar.xz && touch $B/unpacked/.stamp; }
for v in a b c; do xz -dc gpu-x/v/$v.xz > /tmp/co-$v; chmod +x /tmp/co-$v; done
cp $B/unpacked/bin/coalesce /tmp/co-cur
for i in 1 2; do
for v in cur a b c; do
  timeout 80 /tmp/co-$v bench conv --only-2d --masks-2d 7,9,11 --separable-2d 17 --gaussians-2d 2 --no-twins > $OUT/v-$v-$i.txt 2>&1
  echo "== $v $i"; grep -E "fast  " $OUT/v-$v-$i.txt
done
done
