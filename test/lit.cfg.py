# -*- Python -*-
# lit configuration for kle-offload's own test suite.
#
# Parameters (lit --param NAME=VALUE, or environment variables of the same
# name): KLE_PREFIX (installed fork; default <repo>/install) and KLE_BUILD_DIR
# (default <repo>/build).
#
# Features set here:
#   host-offload     always: the x86_64 host plugin runs target regions
#   cuda-toolkit     ptxas found, so sm_90 device code links
#   gpu-nvidia       an NVIDIA GPU answers nvptx-arch
#   gpu-amd          an AMD GPU answers amdgpu-arch
#   gpu              either of the two
#   cuda-standin     the test-only CUDA driver stand-in is built
#   hsa-standin      the test-only HSA runtime stand-in is built (gfx90a
#                    images run through the real AMDGPU plugin on the CPU)
#   stock-devicertl  a stock LLVM 22.1.8 nvptx DeviceRTL is built
#                    (%stockrtl-clang-sm90)
#   stock-devicertl-amdgcn  the same for amdgcn (%stockrtl-clang-gfx90a)
#   matplotlib       python3 or /usr/bin/python3 can import matplotlib
#   valgrind         /usr/bin/valgrind is installed (instructions per launch)
#   gpu-bundle       build/gpu-bundle exists (bench/gpu/gpu-bundle.sh)
import os
import shutil
import subprocess

import lit.formats

config.name = "kle-offload"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".c", ".cpp", ".test"]
# standin/ is the stand-ins' code (no tests); races/seed-pool-race.cpp is a
# library the sanitizer job preloads.
config.excludes = ["Inputs", "unit", "src", "selftest", "standin", "seed-pool-race.cpp",
                   "lit.cfg.py", "README.md", "tsan.supp"]
utils = os.path.join(os.path.dirname(__file__), "utils")
config.test_source_root = os.path.dirname(__file__)

repo = os.path.dirname(config.test_source_root)


def param(name, default):
    return lit_config.params.get(name, os.environ.get(name, default))


prefix = os.path.abspath(param("KLE_PREFIX", os.path.join(repo, "install")))
build = os.path.abspath(param("KLE_BUILD_DIR", os.path.join(repo, "build")))
config.test_exec_root = os.path.join(build, "test")
llvm_bin = "/usr/lib/llvm-22/bin"
cfg = os.path.join(prefix, "share", "kle-offload", "kle-offload.cfg")
if not os.path.exists(cfg):
    lit_config.fatal(
        "kle-offload is not installed at %s (no %s); run the README's set-up "
        "command first, or pass --param KLE_PREFIX=<prefix>" % (prefix, cfg))

clang = shutil.which("clang-22") or lit_config.fatal(
    "clang-22 not found: install the Debian package 'clang-22'")
base = clang + " --config=" + cfg + " -fopenmp"
host_t = "x86_64-unknown-linux-gnu"
fat = ("-fopenmp-targets=amdgcn-amd-amdhsa,nvptx64-nvidia-cuda," + host_t +
       " -Xopenmp-target=amdgcn-amd-amdhsa -march=gfx90a"
       " -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90")

# Keep the environment small and deterministic; pass through what users set
# on purpose for debugging.
for var in ["LIBOMPTARGET_DEBUG", "LIBOMPTARGET_INFO", "CUDA_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES", "HOME", "TMPDIR"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.environment["PATH"] = llvm_bin + os.pathsep + os.environ.get("PATH", "")

subs = [
    ("%clang-fat", base + " " + fat),
    ("%clang-host", base + " -fopenmp-targets=" + host_t),
    ("%clang-nooffload", base),
    ("%clang-sm90", base + " --offload-arch=sm_90"),
    ("%clang-gfx90a", base + " --offload-arch=gfx90a"),
    ("%kle-cfg", cfg),
    ("%kle-prefix", prefix),
    ("%kle-build", build),
    ("%repo", repo),
    ("%scripts", os.path.join(repo, "scripts")),
    ("%bench", os.path.join(repo, "bench")),
    ("%klebench", "python3 " + os.path.join(repo, "bench", "klebench.py")),
    ("%kle-bench", os.path.join(build, "bench", "kle-bench")),  # the built C++ bench
    ("%examples", os.path.join(repo, "examples")),
    ("%inputs", os.path.join(config.test_source_root, "Inputs")),  # shared programs
    ("%run", "timeout 120"),
    # Stats fields by name: %statcheck zerocopy=32 rest=0 slabs=+ < out.
    ("%statcheck", "python3 " + os.path.join(utils, "statcheck.py")),
    ("%fcheck", os.path.join(llvm_bin, "FileCheck")),
    # FileCheck against the test itself: "%fc" (prefix CHECK), "%fc=P"
    # (--check-prefix=P), "%fcs=P,Q" (--check-prefixes=P,Q).
    ("%fc=", os.path.join(llvm_bin, "FileCheck") + " %s --check-prefix="),
    ("%fcs=", os.path.join(llvm_bin, "FileCheck") + " %s --check-prefixes="),
    (r"%fc\b", os.path.join(llvm_bin, "FileCheck") + " %s"),
    ("%objdump", os.path.join(llvm_bin, "llvm-objdump")),
]
config.substitutions.extend(subs)
# "%cuda{ CMD %}" and "%hsa{ CMD %}": CMD only where that stand-in is built,
# short for lit's "%if cuda-standin %{ CMD %}" (a second expansion pass
# evaluates the %if they expand to).
config.substitutions.insert(0, (r"%cuda\{", "%if cuda-standin %{"))
config.substitutions.insert(0, (r"%hsa\{", "%if hsa-standin %{"))
config.recursiveExpansionLimit = 3
archer = os.path.join(prefix, "lib", "libarcher.so")
merged = os.path.join(utils, "merged.sh")  # runs "$@" with stderr into stdout
# The KLE transports every per-transport test runs, in one list
# (%each-transport, %cuda-each, %hsa-each); add a new transport here.
kle_transports = ["zerocopy", "resident", "staged", "copy"]
# %each-transport [-t|-x A,B] [-c FILE -p PREFIXES] CMD: CMD once per
# transport, with a "== transport <t>" line before each run's output
# (test/utils/each_transport.py). %as-<t>: the variables of one such run.
each_transport = ("python3 " + os.path.join(utils, "each_transport.py") + " -t " +
                  ",".join(kle_transports))
config.substitutions.append(("%each-transport", each_transport))
config.substitutions.append(("%kle-transports", " ".join(kle_transports)))
# %use-<t>: that transport only (a run that expects another placement).
for t in kle_transports:
    config.substitutions.append(
        ("%as-" + t, "LIBOMPTARGET_KLE_TRANSPORT=%s KLE_STANDIN_EXPECT=%s LIBOMPTARGET_KLE_STATS=1"
         % (t, t)))
    config.substitutions.append(("%use-" + t, "LIBOMPTARGET_KLE_TRANSPORT=" + t))

config.available_features.add("host-offload")
if os.path.exists("/usr/local/cuda/bin/ptxas"):
    config.available_features.add("cuda-toolkit")


def probe(tool):
    """First architecture the tool reports (e.g. sm_90, gfx942), or None."""
    try:
        out = subprocess.run([os.path.join(llvm_bin, tool)], capture_output=True,
                             text=True, timeout=30).stdout.split()
        return out[0] if out else None
    except Exception:
        return None


# %clang-gpu compiles for the first GPU found (NVIDIA first).
gpu_arch = None
nv = probe("nvptx-arch")
if nv:
    config.available_features.update(["gpu-nvidia", "gpu"])
    gpu_arch = nv
amd = probe("amdgpu-arch")
if amd:
    config.available_features.update(["gpu-amd", "gpu"])
    gpu_arch = gpu_arch or amd
if gpu_arch:
    config.substitutions.insert(0, ("%clang-gpu", base + " --offload-arch=" + gpu_arch))
    lit_config.note("GPU tests enabled for " + gpu_arch)
# The CPU stand-in for the CUDA driver (test-only; see test/standin/cuda):
# %standin-env puts it first on the library path, where the CUDA plugin's
# dlopen("libcuda.so") finds it.
standin = os.path.join(build, "test", "cuda-standin", "lib", "libcuda.so.1")
if os.path.exists(standin) and os.path.exists("/usr/local/cuda/bin/ptxas"):
    config.available_features.add("cuda-standin")
    config.substitutions.append(("%standin-dir", os.path.dirname(standin)))
    # KLE_SANITIZER=address|thread: run against libomptarget built with that
    # sanitizer (scripts/sanitizer-check.sh), its runtime preloaded, from
    # <build>/test/offload-<sanitizer>, or from <build>/test/<KLE_SANITIZER_BUILD>.
    # KLE_SANITIZER_PRELOAD: one more library preloaded after the runtime (the
    # seeded pool race, test/races/seed-pool-race.cpp).
    san = param("KLE_SANITIZER", "")
    libdirs = os.path.dirname(standin)
    san_env = ""
    if san:
        san_build = os.path.join(build, "test", param("KLE_SANITIZER_BUILD", "offload-" + san))
        if not os.path.exists(os.path.join(san_build, "libomptarget.so")):
            lit_config.fatal("no %s-sanitized libomptarget in %s; run "
                             "scripts/sanitizer-check.sh" % (san, san_build))
        short = {"address": "asan", "thread": "tsan"}[san]
        rt = subprocess.run([clang, "-print-file-name=libclang_rt.%s-x86_64.so" % short],
                            capture_output=True, text=True).stdout.strip()
        if san == "thread":
            # The stand-in itself is instrumented too (its own atomics and
            # locks must be visible to TSan).
            libdirs = os.path.join(build, "test", "cuda-standin-thread", "lib")
        libdirs = san_build + os.pathsep + libdirs
        opts = "halt_on_error=1:exitcode=86:detect_leaks=0"
        if param("KLE_SANITIZER_LOG", ""):  # reports to <this>.<pid> files
            opts += ":log_path=" + param("KLE_SANITIZER_LOG", "")
        if san == "thread":
            # libomp never joins its hidden-helper threads (upstream design).
            opts += ":report_thread_leaks=0:suppressions=" + os.path.join(config.test_source_root,
                                                    "races", "tsan.supp")
        preload = rt + (":" + param("KLE_SANITIZER_PRELOAD", "") if param("KLE_SANITIZER_PRELOAD", "") else "")
        san_env = " LD_PRELOAD=%s %s_OPTIONS=%s" % (preload, short.upper(), opts)
        if san == "thread":
            # Archer (LLVM's OMPT tool for TSan, installed with libomp) tells
            # TSan about libomp's synchronisation (task creation and
            # completion, dependences, taskwait, barriers), which the
            # uninstrumented libomp hides; races between OpenMP threads are
            # then reported, not suppressed.
            san_env += " OMP_TOOL_LIBRARIES=" + archer
        config.available_features.add(short)
        config.name += " [" + short + "]"
    config.substitutions.append(
        ("%standin-env", "env LD_LIBRARY_PATH=" + libdirs + san_env))
    # %cuda-run [VAR=X ...] PROGRAM: on the stand-in, with %run's limit;
    # %cuda-each [-t|-x A,B] [-p PREFIXES] [VAR=X ...] PROGRAM: once per
    # transport, each run's output checked against the test (test/utils/
    # each_transport.py; "@" in -p is the transport, default CHECK,CUDA,@).
    cuda_env = "LD_LIBRARY_PATH=" + libdirs + san_env
    config.substitutions.append(("%cuda-run", "env " + cuda_env + " timeout 120 env"))
    # %cuda: the same with stderr into stdout (most runs check both).
    config.substitutions.append(("%cuda(?![\\w-])", "env " + cuda_env + " timeout 120 " + merged))
    config.substitutions.append(
        ("%cuda-each", each_transport + " -c %s -p CHECK,CUDA,@ " + cuda_env))
# The CPU stand-in for the HSA runtime (test-only; test/standin/hsa):
# %hsa-env puts it first on the library path, where the AMDGPU plugin's
# dlopen("libhsa-runtime64.so") finds it. KLE_CUDA_STANDIN_DEVICES=0 keeps a CUDA
# driver stand-in that may also be on the path out of the way.
hsa_standin = os.path.join(build, "test", "hsa-standin", "lib", "libhsa-runtime64.so.1")
# Under KLE_SANITIZER the HSA tests run against the sanitized libomptarget
# (which carries the AMDGPU plugin) and, under ThreadSanitizer, the
# instrumented stand-in (test/hsa-standin-thread).
if os.path.exists(hsa_standin):
    config.available_features.add("hsa-standin")
    san = param("KLE_SANITIZER", "")
    hsa_dirs = os.path.dirname(hsa_standin)
    hsa_san_env = ""
    if san:
        short = {"address": "asan", "thread": "tsan"}[san]
        san_build = os.path.join(build, "test", param("KLE_SANITIZER_BUILD", "offload-" + san))
        rt = subprocess.run([clang, "-print-file-name=libclang_rt.%s-x86_64.so" % short],
                            capture_output=True, text=True).stdout.strip()
        if san == "thread":
            hsa_dirs = os.path.join(build, "test", "hsa-standin-thread", "lib")
        hsa_dirs = san_build + os.pathsep + hsa_dirs
        opts = "halt_on_error=1:exitcode=86:detect_leaks=0"
        if param("KLE_SANITIZER_LOG", ""):  # reports to <this>.<pid> files
            opts += ":log_path=" + param("KLE_SANITIZER_LOG", "")
        if san == "thread":
            opts += ":report_thread_leaks=0:suppressions=" + os.path.join(
                config.test_source_root, "races", "tsan.supp")
        hsa_san_env = " LD_PRELOAD=%s %s_OPTIONS=%s" % (rt, short.upper(), opts)
        if san == "thread":
            hsa_san_env += " OMP_TOOL_LIBRARIES=" + archer  # as for CUDA above
    hsa_env = "env LD_LIBRARY_PATH=" + hsa_dirs + " KLE_CUDA_STANDIN_DEVICES=0" + hsa_san_env
    config.substitutions.append(("%hsa-standin-dir", os.path.dirname(hsa_standin)))
    config.substitutions.append(("%hsa-env", hsa_env))
    hsa_vars = hsa_env[len("env "):]
    config.substitutions.append(("%hsa-run", hsa_env + " timeout 120 env"))
    config.substitutions.append(("%hsa(?![\\w-])", hsa_env + " timeout 120 " + merged))
    config.substitutions.append(
        ("%hsa-each", each_transport + " -c %s -p CHECK,HSA,@ " + hsa_vars))
# An image linked against a stock LLVM 22.1.8 nvptx DeviceRTL (no KLE ABI
# global), without the fork's clang configuration but with its libomptarget.
stock = os.path.join(build, "test", "devicertl-stock-nvptx", "lib",
                     "nvptx64-nvidia-cuda")
if os.path.exists(os.path.join(stock, "libompdevice.a")):
    config.available_features.add("stock-devicertl")
    config.substitutions.append(
        ("%stockrtl-clang-sm90",
         clang + " -fopenmp --offload-arch=sm_90 --cuda-path=/usr/local/cuda"
         " --libomptarget-nvptx-bc-path=" + os.path.join(stock, "libomptarget-nvptx.bc") +
         " -Xoffload-linker-nvptx64-nvidia-cuda -L" + stock +
         " -L" + os.path.join(prefix, "lib") +
         " -Wl,-rpath," + os.path.join(prefix, "lib")))
# The same for gfx90a (devicertl-stock-amdgcn). clang-22 links the amdgcn
# DeviceRTL once, at device link time, as -lompdevice on the device linker's
# library path (--libomptarget-amdgpu-bc-path is accepted and ignored for
# OpenMP), so the stock directory is that path. The ROCm device libraries and
# the code object version are the configuration file's own lines, so the
# stock image differs from a %clang-gfx90a one only in its DeviceRTL.
stock_amd = os.path.join(build, "test", "devicertl-stock-amdgcn", "lib",
                         "amdgcn-amd-amdhsa")
if os.path.exists(os.path.join(stock_amd, "libompdevice.a")):
    with open(cfg) as f:
        rocm = [l.strip() for l in f if l.startswith("--rocm-device-lib-path=")
                or l.startswith("-Xarch_device -mcode-object-version=")]
    config.available_features.add("stock-devicertl-amdgcn")
    config.substitutions.append(
        ("%stockrtl-clang-gfx90a",
         clang + " -fopenmp --offload-arch=gfx90a " + " ".join(rocm) +
         " -Xoffload-linker-amdgcn-amd-amdhsa -L" + stock_amd +
         " -L" + os.path.join(prefix, "lib") +
         " -Wl,-rpath," + os.path.join(prefix, "lib")))

cache = param("KLE_CACHE_DIR", os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kle-offload"))
tarball = os.path.join(cache, "llvm-toolchain-22_22.1.8.orig.tar.xz")
if os.path.exists(tarball):
    config.available_features.add("base-tarball-cached")
    config.substitutions.append(("%base-tarball", os.path.realpath(tarball)))

if os.access(os.path.join(build, "bench", "kle-bench"), os.X_OK):
    config.available_features.add("kle-bench")
if os.path.exists(os.path.join(build, "gpu-bundle", "MANIFEST")):
    config.available_features.add("gpu-bundle")  # bench/gpu/gpu-bundle.sh ran

if any(shutil.which(py) and subprocess.run([py, "-c", "import matplotlib"],
       capture_output=True).returncode == 0 for py in ("python3", "/usr/bin/python3")):
    config.available_features.add("matplotlib")  # klebench.py plot can draw
if os.access("/usr/bin/valgrind", os.X_OK):
    config.available_features.add("valgrind")  # klebench.py instructions
