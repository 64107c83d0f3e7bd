// LIBOMPTARGET_INFO must be a whole decimal number that fits the 32-bit info
// mask, signed or unsigned; anything else prints one warning naming the
// variable and is ignored (patch 0019). Before, libomptarget parsed it with
// std::stoi: "99999999999999999999", "4294967295" (all bits, unsigned) and
// "abc" ended the program with an uncaught std::out_of_range or
// std::invalid_argument (status 134) before the region, and "12abc" was
// read as 12. Blanks around the number and a leading '+' are allowed, as
// std::stoi allowed them and as the runtime's other integer variables do.
// LIBOMPTARGET_DEBUG with such values was and is harmless.
// RUN: %clang-host %s -o %t
// RUN: env LIBOMPTARGET_INFO=99999999999999999999 %run %t 2>&1 | %fc=BAD -DV=99999999999999999999
// RUN: env LIBOMPTARGET_INFO=abc %run %t 2>&1 | %fc=BAD -DV=abc
// RUN: env LIBOMPTARGET_INFO=12abc %run %t 2>&1 | %fc=BAD -DV=12abc
// RUN: env LIBOMPTARGET_INFO=-4294967296 %run %t 2>&1 | %fc=BAD -DV=-4294967296
// BAD: omptarget message: warning: ignoring invalid value '[[V]]' for LIBOMPTARGET_INFO; using 0
// BAD-NOT: info:
// BAD: X=2
// RUN: env LIBOMPTARGET_INFO=4294967295 %run %t 2>&1 | %fc=ALL
// RUN: env LIBOMPTARGET_INFO=-1 %run %t 2>&1 | %fc=ALL
// RUN: env LIBOMPTARGET_INFO=" +4294967295 " %run %t 2>&1 | %fc=ALL
// ALL-NOT: warning
// ALL: omptarget device 0 info:
// ALL: X=2
// RUN: env LIBOMPTARGET_DEBUG=99999999999999999999 %run %t 2>&1 | %fc=DEBUG
// RUN: env LIBOMPTARGET_DEBUG=abc,,x %run %t 2>&1 | %fc=DEBUG
// DEBUG: X=2
#include <stdio.h>

int main(void) {
  int X = 1;
#pragma omp target map(tofrom : X)
  X += 1;
  printf("X=%d\n", X);
  return X != 2;
}
