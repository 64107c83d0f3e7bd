//===- device_count.cpp - The stand-ins' DEVICES knob ---------------------===//
//
// TEST ONLY.  The fronts' `<EnvPrefix>DEVICES` knob (deviceCount, core.h).
//
//===----------------------------------------------------------------------===//

#include "core.h"

#include <cstdio>

namespace standin {

int deviceCount(int Default, int Max) {
  const char *E = frontEnv("DEVICES");
  if (!E)
    return Default;
  uint64_t V;
  if (!parseDecimal(E, uint64_t(Max), V)) {
    char Want[64];
    snprintf(Want, sizeof(Want), "a device count, a decimal number from 0 to %d", Max);
    badFrontEnv("DEVICES", E, Want);
  }
  return int(V);
}

} // namespace standin
