"""Whole-process callgrind figures split by component, and call counts.

Shared by bench/launch-cost.py and bench/kle-instructions.py. Python standard
library only.

parse(path) reads one callgrind output file (any compression, positions and
--separate-callers contexts) and returns a Profile: total Ir, self Ir per
function, each function's object file, calls per callee function, and the
call edges with their inclusive cost (bench/kle-instructions.py's KLE path).

component(fn, ob) names the part of the process a function belongs to:
  libomptarget  libomptarget.so's own code (the OpenMP offload runtime)
  plugin        the plugins linked into libomptarget.so: functions in
                namespace llvm::omp::target::plugin or kle (the fork's KLE
                code), and the plugins' dlopen trampolines (cu*, hsa_*)
  libomp        the host OpenMP runtime
  LLVM          libLLVM (Support: the time profiler, ADT, Error)
  libc          libc, libstdc++, libm, libgcc_s, libpthread (malloc, locks,
                strings, ...)
  loader        ld-linux (symbol lookup: dlsym, lazy binding)
  stand-in      the CUDA driver or HSA runtime stand-in (libcuda.so.1,
                libhsa-runtime64.so.1), or the real driver
  program       the benchmark executable
  other         anything else (valgrind's preload, libffi, libz, ...)
"""
import os
import re

COMPONENTS = ("libomptarget", "plugin", "libomp", "LLVM", "libc", "loader",
              "stand-in", "program", "other")
PLUGIN_FN = re.compile(r"^(llvm::omp::target::plugin::|kle::|cu[A-Z]\w*$|hsa_\w+$)")


class Profile:
    def __init__(self):
        self.total = 0
        self.self_ir = {}   # (object file, fn) -> self Ir
        self.calls = {}     # (object file, callee fn) -> calls
        # Names as callgrind writes them, --separate-callers contexts
        # ("callee'caller1'caller2...") kept:
        self.fn_ob = {}     # fn -> object file (where it was first seen)
        self.edges = {}     # (caller fn, callee fn) -> [calls, inclusive Ir]


def _base(fn):
    return fn.split("'", 1)[0]


def parse(path):
    """A Profile of one callgrind output file (see the module's doc)."""
    names = {"ob": {}, "fl": {}, "fn": {}}

    def name(kind, s):
        m = re.match(r"\((\d+)\)\s*(.*)$", s)
        if not m:
            return s
        if m.group(2):
            names[kind][m.group(1)] = m.group(2)
            return m.group(2)
        return names[kind].get(m.group(1), s)

    p = Profile()
    ir_col, npos, pending, total, summary = None, 1, 0, None, None
    ob = fn = cfn = cob = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                if ir_col is None:
                    raise ValueError("cost line before events: in %s" % path)
                costs = line.split()[npos:]
                ir = int(costs[ir_col]) if ir_col < len(costs) else 0
                if pending:
                    # The inclusive cost of a call: not self.
                    e = p.edges.setdefault((fn, cfn), [0, 0])
                    e[0] += pending
                    e[1] += ir
                    pending = 0
                else:
                    k = (ob, _base(fn))
                    p.self_ir[k] = p.self_ir.get(k, 0) + ir
                continue
            key, _, val = line.partition("=")
            if key == "fn":
                fn = name("fn", val)
                p.fn_ob.setdefault(fn, ob)
            elif key == "ob":
                ob = name("ob", val)
            elif key == "cob":
                cob = name("ob", val)
            elif key in ("fl", "fi", "fe", "cfi", "cfl", "jfi"):
                name("fl", val)
            elif key == "cfn":
                cfn = name("fn", val)
            elif key == "jfn":
                name("fn", val)
            elif key == "calls":
                pending = int(val.split()[0])
                k = (cob or ob, _base(cfn))
                p.calls[k] = p.calls.get(k, 0) + pending
                cob = None
            elif line.startswith("events:"):
                events = line.split(":", 1)[1].split()
                if "Ir" not in events:
                    raise ValueError("no Ir event in %s" % path)
                ir_col = events.index("Ir")
            elif line.startswith("positions:"):
                npos = len(line.split(":", 1)[1].split())
            elif line.startswith("totals:"):
                total = int(line.split()[1 + ir_col])
            elif line.startswith("summary:"):
                summary = int(line.split()[1 + ir_col])
    if ir_col is None:
        raise ValueError("not a callgrind output file: %s" % path)
    p.total = total if total is not None else summary if summary is not None \
        else sum(p.self_ir.values())
    return p


def component(fn, ob):
    """The component (one of COMPONENTS) of function fn in object file ob."""
    b = os.path.basename(ob or "")
    if b.startswith("libomptarget"):
        return "plugin" if PLUGIN_FN.search(fn) else "libomptarget"
    if b.startswith("libomp.so") or b.startswith("libomp-"):
        return "libomp"
    if b.startswith("libLLVM"):
        return "LLVM"
    if re.match(r"lib(c|stdc\+\+|m|gcc_s|pthread)[.-]", b):
        return "libc"
    if b.startswith("ld-linux") or b.startswith("ld-2"):
        return "loader"
    if b.startswith("libcuda.so") or b.startswith("libhsa-runtime64"):
        return "stand-in"
    if b and "." not in b:
        return "program"
    return "other"


def components(p):
    """{component: self Ir} of a Profile."""
    out = dict.fromkeys(COMPONENTS, 0)
    for (ob, fn), ir in p.self_ir.items():
        out[component(fn, ob)] += ir
    return out


# Calls counted per launch: what the launch path should not need, and the
# allocator and lock traffic. Each name is a regular expression matched
# against whole function names (callgrind's, without arguments' types for C).
COUNTED_CALLS = (
    ("dlsym", r"dlsym(@.*)?|___dlsym"),
    ("strtol", r"(__isoc23_)?strtol(@.*)?"),
    ("timeTraceProfilerBegin", r"llvm::timeTraceProfilerBegin\(.*"),
    ("malloc", r"malloc(@.*)?"),
    ("operator new", r"operator new\(.*"),
    ("free", r"free(@.*)?"),
    ("pthread_mutex_lock", r"(__)?pthread_mutex_lock(@.*)?"),
    ("cuCtxSetCurrent", r"cuCtxSetCurrent"),
    ("cuEventRecord", r"cuEventRecord"),
    ("cuStreamWaitEvent", r"cuStreamWaitEvent"),
)


def counted_calls(p):
    """{name: calls} for COUNTED_CALLS in a Profile. The cu* counts are the
    driver library's (the stand-in's) functions, not the plugin's dlopen
    trampolines of the same name."""
    out = {}
    for label, rx in COUNTED_CALLS:
        r = re.compile(r"^(%s)$" % rx)
        n = 0
        for (ob, fn), calls in p.calls.items():
            if not r.match(fn):
                continue
            if label.startswith("cu") and component(fn, ob) != "stand-in":
                continue
            n += calls
        out[label] = n
    return out
