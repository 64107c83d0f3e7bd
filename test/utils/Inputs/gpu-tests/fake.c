// Input of gpu-tests-verify.test: the RUN shapes test/gpu uses.
// RUN: %clang-gpu -O2 %s -o %t -ldl
// RUN: env %use-zerocopy LIBOMPTARGET_KLE_STATS=1 %run %t 2>&1 | %fcheck --check-prefixes=CHECK,ZEROCOPY %s
// RUN: env %use-copy %run %t 2>&1 | %fcheck %s
// CHECK: sum=2016
// ZEROCOPY: zerocopy=1
