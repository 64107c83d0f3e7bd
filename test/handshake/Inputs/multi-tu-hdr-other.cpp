// multi-tu.test: the second unit that instantiates the header's region.
#include "multi-tu-hdr.h"
long other(int n) { return (long)hsum<int>(n); }
