#!/bin/bash
cd "$(dirname "$0")"
R=$PWD/res2; mkdir -p $R
B=../bundle
U=$B/unpacked
T0=$(date +%s)
[ -x $U/bin/coalesce ] || { $B/run.sh $R/unpack --skip-tests --skip-examples > $R/unpack.txt 2>&1; echo "unpacked $(( $(date +%s) - T0 ))s" >> $R/rc.txt; }
export COALESCE_EXPECT_GPU=1
step() { local name=$1; shift; timeout 90 "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt; }
C=$U/bin/coalesce
W="--no-twins --only-1d --widths 3,8,15,24,31 --variants fast,rows"
L=25165825,134217729
xz -d -c ../probe1/base.xz > $R/base && chmod +x $R/base
step base-odd $R/base bench conv $W --lengths $L
step bench-odd $C bench conv $W --lengths $L
step bench-off1 $C bench conv $W --lengths $L --offset-1d 1
export TESTS="transfer copy matrix"
timeout 170 $B/run.sh $R/bundle --skip-examples > $R/bundle-run.txt 2>&1; echo "bundle-rest rc=$? $(( $(date +%s) - T0 ))s" >> $R/rc.txt
step bench-odd-f64 $C bench conv --no-twins --only-1d --dtype-1d f64 --widths 3,8,12 --variants fast,rows --lengths $L
step bench-off1-f64 $C bench conv --no-twins --only-1d --dtype-1d f64 --widths 3,8,12 --variants fast,rows --lengths $L --offset-1d 1
step copy $C bench copy --min-size 32MiB --max-size 512MiB
step bench-1d $C bench conv --only-1d --lengths 2^27 --widths 3,7,15,23,31,63 --variants fast,tensor,rows
cp $R/rc.txt $OUT/rc2.txt
cat $R/bundle/summary.txt > $OUT/summary2.txt 2>/dev/null
tar cJf $OUT/res2.tar.xz -C $R --exclude=bundle/unpacked --exclude=unpack --exclude=base .
