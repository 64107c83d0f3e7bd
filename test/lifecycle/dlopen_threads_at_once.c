// Four threads dlopen four copies of one offload library at the same moment
// and run its regions. registerLib marked the device as having images to
// load before it added the library's table, so a load running on another
// thread in between cleared the mark without seeing the table, which was
// then never loaded: "No image loaded for device 0: its image failed to
// load" and status 134 in 4 of 6 runs on the CUDA stand-in (stock 22.1.8
// hangs or crashes). Patch 0018 now sets the mark after adding the table
// and clears it before a load reads the tables. The threads stay alive
// until exit: threads that end together are a separate shape (DESIGN.md,
// "Not covered").
// REQUIRES: cuda-standin || hsa-standin
// RUN: %cuda{ %clang-sm90 -fPIC -shared %S/Inputs/dlopen_threads_lib.c -o %t.cuda.so %}
// RUN: %cuda{ cp %t.cuda.so %t.cuda.1.so && cp %t.cuda.so %t.cuda.2.so && cp %t.cuda.so %t.cuda.3.so && cp %t.cuda.so %t.cuda.4.so %}
// RUN: %cuda{ %clang-nooffload %s -o %t -ldl -lpthread %}
// RUN: %cuda{ %cuda %t %t.cuda | %fc --implicit-check-not="omptarget error" %}
// RUN: %cuda{ %cuda %t %t.cuda | %fc --implicit-check-not="omptarget error" %}
// RUN: %cuda{ %cuda %t %t.cuda | %fc --implicit-check-not="omptarget error" %}
// RUN: %hsa{ %clang-gfx90a -fPIC -shared %S/Inputs/dlopen_threads_lib.c -o %t.hsa.so %}
// RUN: %hsa{ cp %t.hsa.so %t.hsa.1.so && cp %t.hsa.so %t.hsa.2.so && cp %t.hsa.so %t.hsa.3.so && cp %t.hsa.so %t.hsa.4.so %}
// RUN: %hsa{ %clang-nooffload %s -o %t -ldl -lpthread %}
// RUN: %hsa{ %hsa %t %t.hsa | %fc --implicit-check-not="omptarget error" %}
// RUN: %hsa{ %hsa %t %t.hsa | %fc --implicit-check-not="omptarget error" %}
// CHECK-COUNT-4: ran
// CHECK: done
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static pthread_barrier_t Start, End;
static const char *Prefix;
static void *loader(void *Arg) {
  char Path[4096];
  snprintf(Path, sizeof(Path), "%s.%ld.so", Prefix, (long)Arg);
  pthread_barrier_wait(&Start);
  void *H = dlopen(Path, RTLD_NOW | RTLD_LOCAL);
  if (!H) {
    printf("dlopen: %s\n", dlerror());
    exit(3);
  }
  int (*Run)(void) = (int (*)(void))dlsym(H, "lib_run");
  Run();
  printf("ran\n");
  fflush(stdout);
  pthread_barrier_wait(&End);
  pthread_barrier_wait(&End); // never passes: main exits first
  return 0;
}
int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  Prefix = argv[1];
  pthread_barrier_init(&Start, 0, 4);
  pthread_barrier_init(&End, 0, 5);
  pthread_t T[4];
  for (long I = 0; I < 4; ++I)
    pthread_create(&T[I], 0, loader, (void *)(I + 1));
  pthread_barrier_wait(&End);
  printf("done\n");
  fflush(stdout);
  exit(0);
}
