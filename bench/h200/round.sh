#!/bin/bash
# Run on the GPU machine from the checkout root: NAMES="rows scan ..." bash bench/h200/round.sh
# Runs bench/h200/<name>.sh for each name (each under its own time limit), packing $OUT/r
# into $OUT/r.tgz after each so a run cut short still returns what it measured.
# .device/ holds ../shared/gpu's packages and the others kiln links, fetched here with
# `apt-get download libsodium23 liblapacke liblapack3 libblas3 libtmglib3 libgfortran5
# libquadmath0`; dpkg -x leaves out Debian's BLAS/LAPACK alternatives links, made below.
source .device/setup.sh >/dev/null 2>&1
d=/tmp/opencl/usr/lib/x86_64-linux-gnu
[ -e $d/blas/libblas.so.3 ] && ln -sf $d/blas/libblas.so.3 $d/libblas.so.3
[ -e $d/lapack/liblapack.so.3 ] && ln -sf $d/lapack/liblapack.so.3 $d/liblapack.so.3
mkdir -p $OUT/r
mkdir -p build-gpu/tests; [ -d build-gpu-t ] && cp build-gpu-t/* build-gpu/tests/
build-gpu/tools/kiln info > $OUT/r/info.txt 2>&1
t0=$(date +%s)
for n in $NAMES; do
  mkdir -p $OUT/r/$n
  timeout ${LIMIT:-110} bash bench/h200/$n.sh > $OUT/r/$n/script.log 2>&1
  echo "$n rc=$? at $(( $(date +%s) - t0 ))s" >> $OUT/r/times.txt
  tar czf $OUT/r.tgz -C $OUT r
done
