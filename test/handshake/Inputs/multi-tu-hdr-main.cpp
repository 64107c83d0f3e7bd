// multi-tu.test: hsum<long> in this unit, hsum<int> in the other.
#include <stdio.h>
#include "multi-tu-hdr.h"
long other(int n);
int main() {
  long t = 0;
  for (int k = 0; k < 4; ++k)
    t += hsum<long>(1000) + other(1000);
  printf("done %s\n", t >= 0 ? "ok" : "?");
  fflush(stdout);
  return 0;
}
