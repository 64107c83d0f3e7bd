// The benchmark-only transport switch (KLEBenchSwitch.h, found by dlsym as
// kle-bench finds it) while a nowait launch holds its pool slot: launches
// once under the process's transport, switches to resident, launches one
// nowait reduction, asks for copy until refused, waits, then switches and
// launches once more. Exit status 0 only if the switch was refused in
// flight and accepted after the taskwait.
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

typedef int (*SetTransportFn)(const char *, char *, size_t);

static long reduction(void) {
  long S = 0;
#pragma omp target teams distribute parallel for num_teams(1) reduction(+ : S) \
    map(tofrom : S)
  for (int I = 0; I < 1024; ++I)
    S += I;
  return S;
}

int main(void) {
  SetTransportFn Set =
      (SetTransportFn)dlsym(RTLD_DEFAULT, "__kle_bench_set_transport");
  char Err[256] = "";
  if (!Set) {
    printf("no KLE transport switch (__kle_bench_set_transport)\n");
    return 1;
  }
  long S = reduction(); // initialises the device, the process's transport
  if (Set("resident", Err, sizeof(Err))) {
    printf("switch to resident: refused: %s\n", Err);
    return 1;
  }
  int Refused = 0;
#pragma omp parallel num_threads(1)
#pragma omp single
  {
#pragma omp target teams distribute parallel for num_teams(1) reduction(+ : S) \
    map(tofrom : S) nowait
    for (int I = 0; I < 1024; ++I)
      S += I;
    // Poll until the launch holds its slot (up to 20 s), then ask for copy.
    time_t End = time(NULL) + 20;
    while (!Refused && time(NULL) < End)
      Refused = Set("resident", Err, sizeof(Err));
    if (Refused)
      Refused = Set("copy", Err, sizeof(Err));
#pragma omp taskwait
  }
  if (Refused != 2) {
    printf("switch in flight: %s (%d) %s\n",
           Refused ? "refused for another reason" : "never refused", Refused,
           Err);
    return 1;
  }
  printf("switch in flight: refused: %s\n", Err);
  int Rc = Set("copy", Err, sizeof(Err));
  printf("switch after the taskwait: %s%s\n", Rc ? "refused: " : "ok",
         Rc ? Err : "");
  if (Rc)
    return 1;
  printf("checksum %ld\n", S + reduction());
  return 0;
}
