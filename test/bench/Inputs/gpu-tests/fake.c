// Input of gpu-tests-verify.test: the RUN shapes test/gpu uses.
// RUN: %clang-gpu -O2 %s -o %t -ldl
// RUN: env %use-zerocopy LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcs=CHECK,ZEROCOPY
// RUN: env %use-copy %run %t 2>&1 | %fc
// CHECK: sum=2016
// ZEROCOPY: zerocopy=1
