"""Shared helpers for kle-offload's benchmark scripts (kle-compare.py,
kle-instructions.py): talking to bench/kle-bench. Python standard library
only; imported from the scripts' own directory (the GPU bundle carries it
beside them)."""
import subprocess
import sys


def run(cmd, env, **kw):
    """Run a command with env, capturing text stdout and stderr."""
    return subprocess.run(cmd, env=env, capture_output=True, text=True, **kw)


def list_devices(bench, env, prog):
    """[(device number, uid)] of every offload device kle-bench sees, from
    `kle-bench --list-devices`; on failure exits with one line
    "<prog>: error: ..."."""
    out = run([bench, "--list-devices"], env, timeout=120)
    if out.returncode:
        sys.exit("%s: error: %s --list-devices failed: %s"
                 % (prog, bench, out.stderr.strip()[-300:]))
    devs = []
    for line in out.stdout.splitlines():
        num, _, uid = line.partition(" ")
        if num.isdigit():
            devs.append((int(num), uid.strip()))
    return devs
