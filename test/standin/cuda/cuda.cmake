# The CUDA front (included from ../CMakeLists.txt): the CPU stand-in for the
# CUDA driver (libcuda.so.1), over the shared core. TEST-ONLY.
#
# Builds a shared library that exports the driver entry points the upstream
# CUDA plugin (offload/plugins-nextgen/cuda, dlopen mode) looks up, so the
# plugin's launch path, KLE lifetimes and failure handling can be exercised on
# machines without a GPU.  See README.md.
#
# No install() rules: the library must never end up next to a real driver.
# It is written to
#   <build>/lib/libcuda.so.1   (plus libcuda.so -> libcuda.so.1, because the
#                               upstream dlopen plugin opens "libcuda.so")
set(KLE_STANDIN_CUDA_SRC "${CMAKE_CURRENT_SOURCE_DIR}/cuda")
set(KLE_STANDIN_CUDA_H_DIR "${KLE_UPSTREAM_OFFLOAD_DIR}/plugins-nextgen/cuda/dynamic_cuda")
if(NOT EXISTS "${KLE_STANDIN_CUDA_H_DIR}/cuda.h")
  message(FATAL_ERROR "standin/cuda: ${KLE_STANDIN_CUDA_H_DIR}/cuda.h not found; set KLE_UPSTREAM_OFFLOAD_DIR")
endif()

find_path(LIBELF_INCLUDE_DIR NAMES libelf.h gelf.h PATH_SUFFIXES libelf)
find_library(LIBELF_LIBRARY NAMES elf)
if(NOT LIBELF_INCLUDE_DIR OR NOT LIBELF_LIBRARY)
  message(FATAL_ERROR "standin/cuda: libelf (libelf-dev) is required")
endif()

# One file per API area (cuda_front.h lists them); the KLE contract's checks
# are kle_contract_cuda.cpp.
add_library(kle_cuda_standin SHARED
  "${KLE_STANDIN_CUDA_SRC}/cuda_front.cpp"
  "${KLE_STANDIN_CUDA_SRC}/cuda_context.cpp"
  "${KLE_STANDIN_CUDA_SRC}/cuda_memory.cpp"
  "${KLE_STANDIN_CUDA_SRC}/cuda_module.cpp"
  "${KLE_STANDIN_CUDA_SRC}/cuda_stream.cpp"
  "${KLE_STANDIN_CUDA_SRC}/cuda_launch.cpp"
  "${KLE_STANDIN_CUDA_SRC}/kle_contract_cuda.cpp"
  "${KLE_STANDIN_CUDA_SRC}/happens_before_cuda.cpp")
target_include_directories(kle_cuda_standin PRIVATE "${KLE_STANDIN_CUDA_H_DIR}" "${LIBELF_INCLUDE_DIR}"
  "${KLE_UPSTREAM_OFFLOAD_DIR}/include" "${CMAKE_CURRENT_SOURCE_DIR}/core")
target_link_libraries(kle_cuda_standin PRIVATE kle_standin_core Threads::Threads "${LIBELF_LIBRARY}")
target_compile_options(kle_cuda_standin PRIVATE -Wall -Wno-unused-parameter -fvisibility=hidden)
# -DKLE_STANDIN_SANITIZER=thread: instrument the stand-in too, so that
# ThreadSanitizer sees its own synchronisation (scripts/sanitizer-check.sh).
if(KLE_STANDIN_SANITIZER STREQUAL "thread")
  target_compile_options(kle_cuda_standin PRIVATE -fsanitize=thread -g)
  target_link_options(kle_cuda_standin PRIVATE -fsanitize=thread)
else()
  # Every symbol resolved at link time (the sanitizer runtime is only
  # provided by the executable, so not with a sanitizer).
  target_link_options(kle_cuda_standin PRIVATE -Wl,-z,defs)
endif()
target_link_options(kle_cuda_standin PRIVATE
  "-Wl,--version-script=${KLE_STANDIN_CUDA_SRC}/cuda_standin.map")
set_target_properties(kle_cuda_standin PROPERTIES
  OUTPUT_NAME "cuda"
  PREFIX "lib"
  SUFFIX ".so.1"
  LIBRARY_OUTPUT_DIRECTORY "${KLE_STANDIN_OUT_DIR}"
  LINK_DEPENDS "${KLE_STANDIN_CUDA_SRC}/cuda_standin.map")
# Force the SONAME (CMake would otherwise derive it from OUTPUT_NAME/SUFFIX).
target_link_options(kle_cuda_standin PRIVATE "-Wl,-soname,libcuda.so.1")
set_property(TARGET kle_cuda_standin PROPERTY NO_SONAME ON)

# libcuda.so -> libcuda.so.1 : the upstream dlopen plugin defaults to "libcuda.so".
add_custom_command(TARGET kle_cuda_standin POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E create_symlink libcuda.so.1 "${KLE_STANDIN_OUT_DIR}/libcuda.so"
  VERBATIM)

# Direct driver-API self test (does not need clang/OpenMP).
add_executable(kle_standin_selftest "${KLE_SELFTEST_DIR}/cuda/selftest.cpp")
target_include_directories(kle_standin_selftest PRIVATE "${KLE_STANDIN_CUDA_H_DIR}")
target_link_libraries(kle_standin_selftest PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
set_target_properties(kle_standin_selftest PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/bin")
target_compile_definitions(kle_standin_selftest PRIVATE
  KLE_STANDIN_LIB="${KLE_STANDIN_OUT_DIR}/libcuda.so.1")
add_dependencies(kle_standin_selftest kle_cuda_standin)
if(KLE_STANDIN_SANITIZER STREQUAL "thread")
  # The instrumented stand-in needs the TSan runtime in the process.
  target_compile_options(kle_standin_selftest PRIVATE -fsanitize=thread -g)
  target_link_options(kle_standin_selftest PRIVATE -fsanitize=thread)
endif()

# Optional: build the tiny sm_90 cubin the self test loads (needs ptxas).
find_program(KLE_STANDIN_PTXAS ptxas HINTS /usr/local/cuda/bin)
set(KLE_STANDIN_CUDA_PATH "/usr/local/cuda" CACHE PATH "CUDA toolkit for ptxas (selftest cubin)")
set(KLE_STANDIN_CUBIN "${CMAKE_CURRENT_BINARY_DIR}/selftest/kernels.cubin")
if(KLE_STANDIN_PTXAS AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_custom_command(OUTPUT "${KLE_STANDIN_CUBIN}"
    COMMAND ${CMAKE_COMMAND} -E make_directory "${CMAKE_CURRENT_BINARY_DIR}/selftest"
    COMMAND ${CMAKE_CXX_COMPILER} -x cuda --cuda-gpu-arch=sm_90
            "--cuda-path=${KLE_STANDIN_CUDA_PATH}" -nocudalib -nocudainc
            --cuda-device-only -Wno-unknown-cuda-version -c
            "${KLE_SELFTEST_DIR}/cuda/kernels.cu" -o "${KLE_STANDIN_CUBIN}"
    DEPENDS "${KLE_SELFTEST_DIR}/cuda/kernels.cu"
    COMMENT "standin/cuda: building sm_90 selftest cubin")
  add_custom_target(kle_standin_selftest_cubin ALL DEPENDS "${KLE_STANDIN_CUBIN}")
  target_compile_definitions(kle_standin_selftest PRIVATE
    KLE_STANDIN_SELFTEST_CUBIN="${KLE_STANDIN_CUBIN}")
  add_dependencies(kle_standin_selftest kle_standin_selftest_cubin)
else()
  message(STATUS "standin/cuda: no ptxas/clang; selftest will use its synthetic ELF only")
endif()

foreach(case overwrite free staged-race red-no-kle red-buffer counters-dirty
             counters-inkle no-copy other-stream hb-copy-back hb-kernel-read
             correct staged-ok red-ok hb-ok api)
  add_test(NAME kle_standin_selftest_${case}
           COMMAND kle_standin_selftest ${case})
endforeach()
# The check script asserts that each negative control exits 97 with its
# check's VIOLATION line and the correct cases pass with zero violations.
add_test(NAME kle_standin_selftest_all
         COMMAND ${KLE_SELFTEST_DIR}/cuda/run-selftest.sh
                 $<TARGET_FILE:kle_standin_selftest>)
set_tests_properties(kle_standin_selftest_overwrite kle_standin_selftest_free kle_standin_selftest_staged-race
                     kle_standin_selftest_red-no-kle kle_standin_selftest_red-buffer
                     kle_standin_selftest_counters-dirty kle_standin_selftest_counters-inkle
                     kle_standin_selftest_no-copy kle_standin_selftest_other-stream
                     kle_standin_selftest_hb-copy-back kle_standin_selftest_hb-kernel-read
                     PROPERTIES WILL_FAIL TRUE)
