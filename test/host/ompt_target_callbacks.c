// OMPT callbacks of a target region on the host plugin's device, with a tool
// in the program (ompt_start_tool): the target region's begin and end, its
// kernel submission, and the tofrom map's transfers, whose initial-device
// number is omp_get_initial_device() (patch 0007 passes the plugin manager's
// count there instead of calling omp_get_initial_device()), and each passes
// the region's code pointer (patch 0037 sets and reads it only with a tool:
// here it must be there). Stock LLVM 22.1.8 prints the same lines.
// RUN: %clang-host -O2 %s -o %t && %run %t | %fc
// CHECK: initial device [[N:[1-9][0-9]*]]
// CHECK: target begin device_num=0 codeptr=set
// CHECK: data op transfer_to_device src_device_num=[[N]] dest_device_num=0 bytes=8 codeptr=set
// CHECK: submit begin requested_num_teams=1
// CHECK: submit end
// CHECK: data op transfer_from_device src_device_num=0 dest_device_num=[[N]] bytes=8 codeptr=set
// CHECK: target end device_num=0 codeptr=set
// CHECK: sum 4950

#include <omp-tools.h>
#include <omp.h>
#include <stdio.h>

static void onTarget(ompt_target_t Kind, ompt_scope_endpoint_t Endpoint,
                     int DeviceNum, ompt_data_t *TaskData, ompt_id_t TargetId,
                     const void *CodePtr) {
  if (Kind == ompt_target)
    printf("target %s device_num=%d codeptr=%s\n",
           Endpoint == ompt_scope_begin ? "begin" : "end", DeviceNum,
           CodePtr ? "set" : "null");
}

static void onDataOp(ompt_id_t TargetId, ompt_id_t HostOpId,
                     ompt_target_data_op_t Op, void *Src, int SrcDevice,
                     void *Dest, int DestDevice, size_t Bytes,
                     const void *CodePtr) {
  const char *Name = Op == ompt_target_data_transfer_to_device ? "transfer_to_device"
                     : Op == ompt_target_data_transfer_from_device
                         ? "transfer_from_device"
                         : 0;
  if (Name)
    printf("data op %s src_device_num=%d dest_device_num=%d bytes=%zu "
           "codeptr=%s\n",
           Name, SrcDevice, DestDevice, Bytes, CodePtr ? "set" : "null");
}

static void onSubmit(ompt_scope_endpoint_t Endpoint, ompt_data_t *TargetData,
                     ompt_id_t *HostOpId, unsigned int RequestedNumTeams) {
  if (Endpoint == ompt_scope_begin)
    printf("submit begin requested_num_teams=%u\n", RequestedNumTeams);
  else
    printf("submit end\n");
}

static int init(ompt_function_lookup_t Lookup, int InitialDevice,
                ompt_data_t *ToolData) {
  ompt_set_callback_t Set = (ompt_set_callback_t)Lookup("ompt_set_callback");
  if (!Set)
    return 0;
  Set(ompt_callback_target, (ompt_callback_t)onTarget);
  Set(ompt_callback_target_data_op, (ompt_callback_t)onDataOp);
  Set(ompt_callback_target_submit_emi, (ompt_callback_t)onSubmit);
  return 1;
}

static void fini(ompt_data_t *ToolData) {}

ompt_start_tool_result_t *ompt_start_tool(unsigned int Version,
                                          const char *RuntimeVersion) {
  static ompt_start_tool_result_t Result = {&init, &fini, {0}};
  return &Result;
}

int main(void) {
  printf("initial device %d\n", omp_get_initial_device());
  long Sum = 0;
#pragma omp target teams distribute parallel for device(0) num_teams(1) reduction(+ : Sum) map(tofrom : Sum)
  for (int I = 0; I < 100; ++I)
    Sum += I;
  printf("sum %ld\n", Sum);
  return 0;
}
