// LIBOMPTARGET_PROFILE traces keep their source locations and details now
// that patch 0008 builds them only when the profiler is on: the region's
// "Runtime: target exe", "Kernel Target", "HostToDev", "DevToHost" and
// "Runtime: synchronize" sections each carry the region's ident_t string
// (";file;function;line;column;;") and their details. Without the profiler,
// see launch_path_calls.test. LIBOMPTARGET_INFO's kernel line keeps its
// source location too.
// RUN: %clang-host -O2 -gline-tables-only %s -o %t
// RUN: rm -f %t.json
// RUN: env LIBOMPTARGET_PROFILE=%t.json LIBOMPTARGET_PROFILE_GRANULARITY=0 %run %t | %fc=OUT
// RUN: %fc=TRACE --input-file=%t.json
// RUN: env LIBOMPTARGET_INFO=1 %run %t 2>&1 | %fc=INFO
// INFO: omptarget device 0 info: Entering OpenMP kernel at profile_trace_source.c:[[#@LINE+16]]:{{[0-9]+}} with 1 arguments:
// INFO-NEXT: omptarget device 0 info: tofrom(Sum)[8]
// INFO-NEXT: sum 4950
// OUT: sum 4950
// TRACE-DAG: "name":"Runtime: target exe","args":{"detail":";{{[^"]*}}profile_trace_source.c;main;[[#@LINE+12]];{{[0-9]+}};;NumTeams=1;NumArgs={{[0-9]+}}"}
// TRACE-DAG: "name":"Kernel Target","args":{"detail":";{{[^"]*}}profile_trace_source.c;main;[[#@LINE+11]];{{[0-9]+}};;NumArguments={{[0-9]+}};NumTeams=1;TripCount=100"}
// TRACE-DAG: "name":"HostToDev","args":{"detail":";{{[^"]*}}profile_trace_source.c;main;[[#@LINE+10]];{{[0-9]+}};;Size=8B"}
// TRACE-DAG: "name":"DevToHost","args":{"detail":";{{[^"]*}}profile_trace_source.c;main;[[#@LINE+9]];{{[0-9]+}};;Size=8B"}
// TRACE-DAG: "name":"Runtime: synchronize","args":{"detail":";{{[^"]*}}profile_trace_source.c;main;[[#@LINE+8]];{{[0-9]+}};;"}

#include <omp.h>
#include <stdio.h>

int main(void) {
  long Sum = 0;
  int Dev = 0;
#pragma omp target teams distribute parallel for device(Dev) num_teams(1) reduction(+ : Sum) map(tofrom : Sum)
  for (int I = 0; I < 100; ++I)
    Sum += I;
  printf("sum %ld\n", Sum);
  return 0;
}
