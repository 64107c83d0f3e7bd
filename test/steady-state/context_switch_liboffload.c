// liboffload keeps a queue across calls (olSyncQueue does not release it):
// user code that leaves the thread without a current CUDA context between
// two olMemcpy on the same queue must not make the second fail. The CUDA
// plugin checks the context before each copy (patch 0024); checking once per
// queue and thread instead failed the copy back ("invalid device context").
// The stand-in copies memory, so the values are checked.
// REQUIRES: cuda-standin
// RUN: %clang-nooffload %s -I%kle-prefix/include -L%kle-prefix/lib -Wl,-rpath,%kle-prefix/lib -lLLVMOffload -ldl -o %t
// RUN: %cuda %t | %fc
#include <dlfcn.h>
#include <stdbool.h> // before OffloadAPI.h, which uses bool
#include <stdio.h>

#include <offload/OffloadAPI.h>

typedef int (*CtxSetFn)(void *);
static ol_device_handle_t Gpu, Host;

static bool pickDevice(ol_device_handle_t Dev, void *Unused) {
  ol_device_type_t Type;
  ol_platform_handle_t Platform;
  ol_platform_backend_t Backend;
  if (olGetDeviceInfo(Dev, OL_DEVICE_INFO_TYPE, sizeof(Type), &Type))
    return true;
  if (Type == OL_DEVICE_TYPE_HOST) {
    Host = Dev;
  } else if (!Gpu &&
             !olGetDeviceInfo(Dev, OL_DEVICE_INFO_PLATFORM, sizeof(Platform),
                              &Platform) &&
             !olGetPlatformInfo(Platform, OL_PLATFORM_INFO_BACKEND,
                                sizeof(Backend), &Backend) &&
             Backend == OL_PLATFORM_BACKEND_CUDA) {
    Gpu = Dev;
  }
  return true;
}

#define CHECK_OL(Call)                                                         \
  do {                                                                         \
    ol_result_t Res = (Call);                                                  \
    if (Res) {                                                                 \
      printf("%s failed: %s\n", #Call, Res->Details);                         \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  CHECK_OL(olInit());
  CHECK_OL(olIterateDevices(pickDevice, NULL));
  if (!Gpu || !Host) {
    printf("no CUDA device\n");
    return 1;
  }
  CtxSetFn Set = (CtxSetFn)dlsym(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD),
                                 "cuCtxSetCurrent");
  void *Dev;
  int In = 41, Out = 0;
  ol_queue_handle_t Queue;
  CHECK_OL(olMemAlloc(Gpu, OL_ALLOC_TYPE_DEVICE, sizeof(int), &Dev));
  CHECK_OL(olCreateQueue(Gpu, &Queue));
  CHECK_OL(olMemcpy(Queue, Dev, Gpu, &In, Host, sizeof(int)));
  CHECK_OL(olSyncQueue(Queue));
  Set(NULL); // user code between two calls on the queue
  CHECK_OL(olMemcpy(Queue, &Out, Host, Dev, Gpu, sizeof(int)));
  CHECK_OL(olSyncQueue(Queue));
  printf("after a sync: %d\n", Out);
  fflush(stdout);
  In = 7;
  CHECK_OL(olMemcpy(Queue, Dev, Gpu, &In, Host, sizeof(int)));
  Set(NULL); // between two copies, no sync
  CHECK_OL(olMemcpy(Queue, &Out, Host, Dev, Gpu, sizeof(int)));
  CHECK_OL(olSyncQueue(Queue));
  printf("without a sync: %d\n", Out);
  fflush(stdout);
  CHECK_OL(olDestroyQueue(Queue));
  CHECK_OL(olMemFree(Dev));
  CHECK_OL(olShutDown());
  return 0;
}
// CHECK-NOT: VIOLATION
// CHECK: after a sync: 41
// CHECK: without a sync: 7
// CHECK: kle-standin: {{.*}}violations=0
