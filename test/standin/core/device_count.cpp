//===- device_count.cpp - The stand-ins' DEVICES knob ---------------------===//
//
// TEST ONLY.  The fronts' `<PREFIX>DEVICES` knob (deviceCount, core.h).
//
//===----------------------------------------------------------------------===//

#include "core.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace standin {

int deviceCount(int Default, int Max) {
  const char *E = env("DEVICES");
  if (!E)
    return Default;
  size_t Len = std::strlen(E);
  errno = 0;
  unsigned long long V = std::strtoull(E, nullptr, 10);
  if (Len == 0 || std::strspn(E, "0123456789") != Len || errno ||
      V > unsigned(Max)) {
    std::fprintf(stderr,
                 "%s: error: %sDEVICES=\"%s\" is not valid: want a device "
                 "count, a decimal number from 0 to %d\n",
                 tag(), envPrefix(), E, Max);
    std::fflush(nullptr);
    _exit(2);
  }
  return int(V);
}

} // namespace standin
