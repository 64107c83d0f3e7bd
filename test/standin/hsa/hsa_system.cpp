//===- hsa_system.cpp - HSA stand-in: init, agents, system info, ISAs -----===//
//
// TEST ONLY.  hsa_init / hsa_shut_down (which start the DMA and handler
// threads and print the live report), status strings, system and agent
// info, ISAs and the system event handler: a CPU agent and one gfx90a GPU.
//
//===----------------------------------------------------------------------===//

#include "hsa_front.h"

#include <cstring>
#include <thread>

using namespace hsafront;

namespace hsafront {

void startThreads() {
  std::lock_guard<std::mutex> G(g().Mtx);
  if (g().ThreadsStarted)
    return;
  g().ThreadsStarted = true;
  std::thread(dmaWorker).detach();
  std::thread(handlerWorker).detach();
}

} // namespace hsafront

//===----------------------------------------------------------------------===//
// Exports: init, agents, ISAs
//===----------------------------------------------------------------------===//

EXPORT hsa_status_t hsa_init() {
  ENTRY("hsa_init");
  startThreads();
  std::lock_guard<std::mutex> G(g().Mtx);
  g().InitCount++;
  g().EverInit = true;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_shut_down() {
  ENTRY("hsa_shut_down");
  {
    std::lock_guard<std::mutex> G(g().Mtx);
    if (!g().InitCount)
      return HSA_STATUS_ERROR_NOT_INITIALIZED;
    if (--g().InitCount)
      return HSA_STATUS_SUCCESS;
  }
  // Let queued copies and handlers finish before reporting.
  g().Wake.waitUntil([] {
    std::lock_guard<std::mutex> G(g().Mtx);
    return g().Copies.empty() && g().HandlersRunning == 0;
  }, 2000000000ull);
  liveReport("hsa_shut_down");
  statsReport(true);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_status_string(hsa_status_t S, const char **Out) {
  ENTRY("hsa_status_string");
  if (!Out)
    return ST_INVALID_ARGUMENT;
  const char *T = statusText(S);
  *Out = T ? T : "unknown HSA status (kle-hsa-standin)";
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t A, void *V) {
  ENTRY("hsa_system_get_info");
  NEED_INIT();
  if (!V)
    return ST_INVALID_ARGUMENT;
  if (A == HSA_SYSTEM_INFO_VERSION_MAJOR)
    *static_cast<uint16_t *>(V) = 1;
  else if (A == HSA_SYSTEM_INFO_VERSION_MINOR)
    *static_cast<uint16_t *>(V) = 1;
  else
    return ST_INVALID_ARGUMENT;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_iterate_agents(hsa_status_t (*Cb)(hsa_agent_t, void *), void *D) {
  ENTRY("hsa_iterate_agents");
  NEED_INIT();
  if (!Cb)
    return ST_INVALID_ARGUMENT;
  hsa_status_t S = Cb(hsa_agent_t{CPU_AGENT}, D);
  if (S != HSA_STATUS_SUCCESS)
    return S;
  if (gpuCount())
    return Cb(hsa_agent_t{GPU_AGENT}, D);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t A, hsa_agent_info_t Attr, void *V) {
  ENTRY("hsa_agent_get_info");
  NEED_INIT();
  if (!validAgent(A) || (A.handle == GPU_AGENT && !gpuCount()))
    return ST_INVALID_AGENT;
  if (!V)
    return ST_INVALID_ARGUMENT;
  bool Gpu = A.handle == GPU_AGENT;
  auto U32 = [&](uint32_t X) { *static_cast<uint32_t *>(V) = X; };
  auto Str = [&](const char *S, size_t Cap) {
    memset(V, 0, Cap);
    strncpy(static_cast<char *>(V), S, Cap - 1);
  };
  switch (int(Attr)) {
  case HSA_AGENT_INFO_NAME: Str(Gpu ? "gfx90a" : "kle-hsa-standin-cpu", 64); break;
  case HSA_AGENT_INFO_VENDOR_NAME: Str(Gpu ? "AMD" : "CPU", 64); break;
  case HSA_AMD_AGENT_INFO_PRODUCT_NAME: Str(Gpu ? "kle-hsa-standin MI210 (CPU stand-in)" : "CPU", 64); break;
  case HSA_AGENT_INFO_FEATURE: U32(Gpu ? HSA_AGENT_FEATURE_KERNEL_DISPATCH : 0); break;
  case HSA_AGENT_INFO_MACHINE_MODEL: U32(HSA_MACHINE_MODEL_LARGE); break;
  case HSA_AGENT_INFO_PROFILE: U32(HSA_PROFILE_BASE); break;
  case HSA_AGENT_INFO_DEVICE: U32(Gpu ? HSA_DEVICE_TYPE_GPU : HSA_DEVICE_TYPE_CPU); break;
  case HSA_AGENT_INFO_NODE: U32(Gpu ? 1 : 0); break;
  case HSA_AMD_AGENT_INFO_UUID: Str(Gpu ? "GPU-5354414e44494e31" : "CPU-XX", 24); break;
  default:
    if (!Gpu)
      return ST_INVALID_ARGUMENT;
    switch (int(Attr)) {
    case HSA_AGENT_INFO_WAVEFRONT_SIZE: U32(64); break;
    case HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY: *static_cast<uint64_t *>(V) = 100000000; break;
    case HSA_AGENT_INFO_WORKGROUP_MAX_DIM: {
      uint16_t *D = static_cast<uint16_t *>(V);
      D[0] = D[1] = D[2] = MAX_WG;
      break;
    }
    case HSA_AGENT_INFO_WORKGROUP_MAX_SIZE: U32(MAX_WG); break;
    case HSA_AGENT_INFO_GRID_MAX_DIM:
      *static_cast<hsa_dim3_t *>(V) = hsa_dim3_t{UINT32_MAX, UINT32_MAX, UINT32_MAX};
      break;
    case HSA_AGENT_INFO_GRID_MAX_SIZE: U32(UINT32_MAX); break;
    case HSA_AGENT_INFO_FBARRIER_MAX_SIZE: U32(32); break;
    case HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: U32(104); break;
    case HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU: U32(32); break;
    case HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU: U32(4); break;
    case HSA_AGENT_INFO_QUEUE_MAX_SIZE: U32(131072); break;
    case HSA_AGENT_INFO_QUEUE_MIN_SIZE: U32(64); break;
    case HSA_AGENT_INFO_QUEUES_MAX: U32(128); break;
    case HSA_AGENT_INFO_CACHE_SIZE: {
      uint32_t *C = static_cast<uint32_t *>(V);
      C[0] = 16384, C[1] = 8 << 20, C[2] = 0, C[3] = 0;
      break;
    }
    case HSA_AMD_AGENT_INFO_CACHELINE_SIZE: U32(128); break;
    case HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY: U32(1700); break;
    case HSA_AMD_AGENT_INFO_MEMORY_MAX_FREQUENCY: U32(1600); break;
    case HSA_AMD_AGENT_INFO_CHIP_ID: U32(0x740f); break;
    case HSA_AGENT_INFO_FAST_F16_OPERATION: *static_cast<bool *>(V) = true; break;
    default: return ST_INVALID_ARGUMENT;
    }
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_agent_iterate_isas(hsa_agent_t A, hsa_status_t (*Cb)(hsa_isa_t, void *),
                                           void *D) {
  ENTRY("hsa_agent_iterate_isas");
  NEED_INIT();
  if (!validAgent(A))
    return ST_INVALID_AGENT;
  if (!Cb)
    return ST_INVALID_ARGUMENT;
  if (A.handle != GPU_AGENT)
    return HSA_STATUS_SUCCESS;
  return Cb(hsa_isa_t{0x900a}, D);
}

EXPORT hsa_status_t hsa_isa_get_info_alt(hsa_isa_t I, hsa_isa_info_t Attr, void *V) {
  ENTRY("hsa_isa_get_info_alt");
  NEED_INIT();
  if (I.handle != 0x900a || !V)
    return ST_INVALID_ARGUMENT;
  if (Attr == HSA_ISA_INFO_NAME_LENGTH)
    *static_cast<uint32_t *>(V) = uint32_t(strlen(ISA_NAME) + 1);
  else if (Attr == HSA_ISA_INFO_NAME)
    memcpy(V, ISA_NAME, strlen(ISA_NAME) + 1);
  else
    return ST_INVALID_ARGUMENT;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_register_system_event_handler(hsa_amd_system_event_callback_t Cb,
                                                          void *Data) {
  ENTRY("hsa_amd_register_system_event_handler");
  NEED_INIT();
  std::lock_guard<std::mutex> G(g().Mtx);
  g().EventCb = Cb;
  g().EventData = Data;
  return HSA_STATUS_SUCCESS;
}
