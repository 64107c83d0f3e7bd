# CMake package for kle-offload.
#
#   find_package(kle-offload 0.1 REQUIRED)   # CMAKE_PREFIX_PATH=<prefix>
#   add_executable(app app.c)
#   target_link_libraries(app PRIVATE kle::offload)
#   kle_offload_targets(app HOST ARCHS gfx90a sm_90)
#
# kle::offload      INTERFACE target: compiles and links with -fopenmp and the
#                   fork's clang configuration file (DeviceRTL, libomptarget,
#                   rpath). Requires clang 22 as the C/C++ compiler.
# kle::omptarget    IMPORTED target for <prefix>/lib/libomptarget.so.
# kle_offload_targets(<target> [HOST] [ARCHS <arch>...])
#                   adds the offload targets: gfx* -> amdgcn-amd-amdhsa,
#                   sm_* -> nvptx64-nvidia-cuda, HOST -> x86_64-unknown-linux-gnu.
# Variables: KLE_OFFLOAD_PREFIX, KLE_OFFLOAD_CLANG_CONFIG.
get_filename_component(KLE_OFFLOAD_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(KLE_OFFLOAD_CLANG_CONFIG "${KLE_OFFLOAD_PREFIX}/share/kle-offload/kle-offload.cfg")

set(_kle_clang_C clang-22)
set(_kle_clang_CXX clang++-22)
foreach(_kle_lang C CXX)
  if(CMAKE_${_kle_lang}_COMPILER_ID AND NOT (CMAKE_${_kle_lang}_COMPILER_ID STREQUAL "Clang"
      AND CMAKE_${_kle_lang}_COMPILER_VERSION VERSION_GREATER_EQUAL 22
      AND CMAKE_${_kle_lang}_COMPILER_VERSION VERSION_LESS 23))
    set(kle-offload_FOUND FALSE)
    set(kle-offload_NOT_FOUND_MESSAGE
        "kle-offload needs clang 22 as the ${_kle_lang} compiler (found ${CMAKE_${_kle_lang}_COMPILER_ID} ${CMAKE_${_kle_lang}_COMPILER_VERSION}); configure with -DCMAKE_${_kle_lang}_COMPILER=${_kle_clang_${_kle_lang}}")
    return()
  endif()
endforeach()
if(NOT EXISTS "${KLE_OFFLOAD_CLANG_CONFIG}" OR NOT EXISTS "${KLE_OFFLOAD_PREFIX}/lib/libomptarget.so")
  set(kle-offload_FOUND FALSE)
  set(kle-offload_NOT_FOUND_MESSAGE "kle-offload prefix ${KLE_OFFLOAD_PREFIX} is incomplete (no libomptarget.so or clang config); rerun the set-up command")
  return()
endif()

if(NOT TARGET kle::omptarget)
  add_library(kle::omptarget SHARED IMPORTED)
  set_target_properties(kle::omptarget PROPERTIES
    IMPORTED_LOCATION "${KLE_OFFLOAD_PREFIX}/lib/libomptarget.so")
  add_library(kle::offload INTERFACE IMPORTED)
  set_target_properties(kle::offload PROPERTIES
    INTERFACE_COMPILE_OPTIONS "--config=${KLE_OFFLOAD_CLANG_CONFIG};-fopenmp"
    INTERFACE_LINK_OPTIONS "--config=${KLE_OFFLOAD_CLANG_CONFIG};-fopenmp")
endif()

function(kle_offload_targets target)
  cmake_parse_arguments(PARSE_ARGV 1 KLE "HOST" "" "ARCHS")
  set(triples)
  set(opts)
  # ARCHS "${list}" (quoted) arrives as one escaped element: flatten it.
  set(archs)
  foreach(a IN LISTS KLE_ARCHS)
    list(APPEND archs ${a})
  endforeach()
  foreach(arch IN LISTS archs)
    if(arch MATCHES "^gfx[0-9]+[0-9a-f]*(:[a-z]+[+-])*$")
      set(t amdgcn-amd-amdhsa)
    elseif(arch MATCHES "^sm_[0-9]+a?$")
      set(t nvptx64-nvidia-cuda)
    else()
      message(FATAL_ERROR "kle_offload_targets: unknown GPU architecture '${arch}' (expected an AMD gfx<id>[:feature+-], e.g. gfx90a, or an NVIDIA sm_<n>, e.g. sm_90)")
    endif()
    if(t IN_LIST triples)
      message(FATAL_ERROR "kle_offload_targets: one architecture per triple (${t} given twice)")
    endif()
    list(APPEND triples ${t})
    list(APPEND opts "SHELL:-Xopenmp-target=${t} -march=${arch}")
  endforeach()
  if(KLE_HOST)
    list(APPEND triples x86_64-unknown-linux-gnu)
  endif()
  if(NOT triples)
    message(FATAL_ERROR "kle_offload_targets(${target}): give HOST and/or ARCHS")
  endif()
  string(REPLACE ";" "," joined "${triples}")
  target_compile_options(${target} PRIVATE "-fopenmp-targets=${joined}" ${opts})
  target_link_options(${target} PRIVATE "-fopenmp-targets=${joined}" ${opts})
endfunction()
