#!/usr/bin/env python3
"""Plot the latency distributions per KLE transport from kle-compare.json.

Usage: kle-plot.py <kle-compare.json> [-o out.png] [--benchmarks REGEX]

The format follows -o's extension: .png, .svg, .pdf or any other format
matplotlib writes (a name without an extension gets PNG; an unknown
extension is an error before anything is drawn). Default: kle-compare.png
next to the JSON.

One panel per benchmark group (at most --max-panels, 6 by default). Without
--benchmarks the panels are chosen: every LaunchLatency/* group if there are
any, else SyncReduction/teams:1; then the SyncReduction with the most teams,
the KernelReduction (kernel-only time) with the most teams, the
SyncReductionThreads with the most threads and PipelinedReduction. With
--benchmarks, every group whose benchmark (or its no-KLE baseline) name
matches REGEX (re.search on the full name, e.g. "SyncReduction/teams:1/real_time"),
in that order of preference first.

Each panel has one row per transport, always in the same order and colour
(baseline grey on top, then zerocopy, resident, staged, copy): a box (quartiles) with
whiskers and one jittered point per sample, or for many samples a histogram
violin with a narrow box. The black bar is the median, printed at the right
with its ratio to the no-KLE baseline ("base") and to the copy transport
("copy"; below 1 = faster); the dashed line is the baseline median. The x axis
is in microseconds, logarithmic when the values in a panel span more than 10x.

Rows that cannot be drawn are skipped with a "kle-plot: warning:" line on
stderr: a transport other than baseline and klebench.TRANSPORTS, or a
median that is not a positive finite number (NaN, inf, 0); samples that are
not positive finite numbers are left out. Errors are one "kle-plot: error:"
line (exit status 2).

Given kle-interleaved.json (kle-compare.py --interleave), it draws instead
one panel per benchmark of the paired differences: per transport, the median
of its per-cycle differences to copy and to the no-KLE baseline, with the
95% CI as a bar (dots: the differences to copy; a CI that holds 0 is "not
resolved"); default output kle-interleaved.png next to the JSON.

Needs matplotlib (Agg backend). If this interpreter cannot import it, the
script re-executes itself once under /usr/bin/python3 (Debian's
python3-matplotlib). Prints "wrote <file> (<N> panels: <names>)".
"""
import argparse
import json
import math
import os
import random
import re
import sys
import time

PROG = "kle-plot"
REEXEC_GUARD = "KLE_PLOT_REEXECED"
SYSTEM_PYTHON = "/usr/bin/python3"

from klebench import TRANSPORTS

# Top to bottom: the baseline, then klebench.TRANSPORTS in their order;
# colours are the Okabe-Ito colour-blind-safe palette (a transport without
# its own colour takes the next unused one).
ROWS = ["baseline"] + list(TRANSPORTS)
_OKABE_ITO = ["#0072B2", "#009E73", "#D55E00", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442"]
COLOURS = {"baseline": "#7f7f7f", "zerocopy": "#0072B2", "staged": "#009E73",
           "copy": "#D55E00", "resident": "#CC79A7"}
for _t in TRANSPORTS:
    if _t not in COLOURS:
        COLOURS[_t] = next(c for c in _OKABE_ITO + ["#000000"]
                           if c not in COLOURS.values() or c == "#000000")
VIOLIN_MIN_SAMPLES = 100  # from this many samples on, a violin instead of points
MAX_POINTS = 400
LOG_SPREAD = 10.0


def die(msg):
    print("%s: error: %s" % (PROG, msg), file=sys.stderr)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        die(message + " (usage: kle-plot.py <kle-compare.json> [-o out.png|.svg|.pdf] "
            "[--benchmarks REGEX] [--max-panels N])")


def baseline_name(name):
    """The no-KLE benchmark of the same shape, as in kle-compare.py: "Baseline"
    for "Reduction" (SyncReductionThreads has none; LaunchLatency rows carry
    their baseline under the same name)."""
    if name.startswith("SyncReductionThreads"):
        return None
    return name.replace("Reduction", "Baseline", 1)


def display_name(name):
    return re.sub(r"/(real|manual|process)_time\b", "", name)


def natural_key(s):
    return [(0, int(p), "") if p.isdigit() else (1, 0, p)
            for p in re.split(r"(\d+)", s) if p]


def arg_value(name, arg):
    m = re.search(r"/%s:(\d+)" % re.escape(arg), name)
    return int(m.group(1)) if m else -1


def positive(v):
    """v is a positive finite number (not a bool)."""
    return (isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v) and v > 0)


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        die("no such file: %s" % path)
    except (OSError, UnicodeDecodeError) as e:
        die("cannot read %s: %s" % (path, getattr(e, "strerror", None) or e))
    except ValueError as e:
        die("%s is not valid JSON: %s" % (path, e))
    if not isinstance(data, dict):
        die("%s is not a kle-compare.json (no top-level object)" % path)
    rows = data.get("results")
    if not isinstance(rows, list) or not rows:
        die("%s has no results (run bench/kle-compare.py first)" % path)
    good = [r for r in rows if isinstance(r, dict) and isinstance(r.get("benchmark"), str)
            and isinstance(r.get("transport"), str)
            and isinstance(r.get("median_s"), (int, float))]
    if not good:
        die("%s has no usable results (need benchmark, transport, median_s)" % path)
    # Rows that cannot be drawn: skipped, with a warning (printed by main()
    # once matplotlib is imported, so not twice if the script re-executes).
    skipped = []
    unknown = [r for r in good if r["transport"] not in ROWS]
    if unknown:
        skipped.append("%d row%s with an unknown transport (%s; known: %s)" % (
            len(unknown), "" if len(unknown) == 1 else "s",
            ", ".join(sorted({repr(r["transport"]) for r in unknown})), ", ".join(ROWS)))
    bad = [r for r in good if r["transport"] in ROWS and not positive(r["median_s"])]
    if bad:
        skipped.append("%d row%s whose median_s is not a positive number (%s)" % (
            len(bad), "" if len(bad) == 1 else "s", ", ".join(
                "%s %s: %r" % (r["benchmark"], r["transport"], r["median_s"])
                for r in bad[:3]) + (", ..." if len(bad) > 3 else "")))
    good = [r for r in good if r["transport"] in ROWS and positive(r["median_s"])]
    if not good:
        die("%s has no usable results: %s" % (path, "; ".join(skipped)))
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    return meta, good, ["skipping " + s for s in skipped]


def groups_of(rows):
    """{group name: {transport: row}}; a group is a KLE benchmark with its
    no-KLE baseline (same name with "Baseline", or the same name); baselines
    that no KLE benchmark claims form groups of their own."""
    by_name = {}
    for r in rows:
        by_name.setdefault(r["benchmark"], {})[r["transport"]] = r
    groups, claimed = {}, set()
    for name, ts in by_name.items():
        kle = {t: r for t, r in ts.items() if t != "baseline"}
        if not kle:
            continue
        g = dict(kle)
        base = by_name.get(baseline_name(name), {}).get("baseline") or ts.get("baseline")
        if base:
            g["baseline"] = base
            claimed.add(base["benchmark"])
        groups[name] = g
    for name, ts in by_name.items():
        if name not in groups and name not in claimed and "baseline" in ts:
            groups[name] = {"baseline": ts["baseline"]}
    return groups


def preferred(names):
    """The panels chosen by default, best first."""
    names = sorted(names, key=natural_key)
    picks = [n for n in names if n.startswith("LaunchLatency/")]
    sync = [n for n in names if n.startswith("SyncReduction/")]
    if not picks:
        picks += [n for n in sync if arg_value(n, "teams") == 1][:1]
    if sync:
        picks.append(max(sync, key=lambda n: arg_value(n, "teams")))
    kern = [n for n in names if n.startswith("KernelReduction/")]
    if kern:  # kernel-only time at the largest (full-device) team count
        picks.append(max(kern, key=lambda n: arg_value(n, "teams")))
    thr = [n for n in names if n.startswith("SyncReductionThreads/")]
    if thr:
        picks.append(max(thr, key=lambda n: arg_value(n, "threads")))
    pipe = [n for n in names if n.startswith("PipelinedReduction/")]
    if pipe:
        picks.append(max(pipe, key=lambda n: arg_value(n, "launches")))
    out = []
    for n in picks:
        if n not in out:
            out.append(n)
    return out


def choose(groups, regex, max_panels):
    names = list(groups)
    if regex is not None:
        try:
            rx = re.compile(regex)
        except re.error as e:
            die("bad --benchmarks regex %r: %s" % (regex, e))
        names = [n for n in names
                 if any(rx.search(r["benchmark"]) for r in groups[n].values())]
        if not names:
            known = sorted({r["benchmark"] for g in groups.values() for r in g.values()},
                           key=natural_key)
            die("no benchmark matches --benchmarks %r (benchmarks: %s%s)" % (
                regex, ", ".join(known[:12]), ", ..." if len(known) > 12 else ""))
        first = preferred(names)
        order = first + sorted((n for n in names if n not in first), key=natural_key)
    else:
        order = preferred(names) or sorted(names, key=natural_key)
    note = None
    if len(order) > max_panels:
        note = "%d matching benchmark groups, plotting the first %d" % (len(order), max_panels)
    elif regex is None and len(order) < len(names):
        note = "plotting %d of %d benchmark groups" % (len(order), len(names))
    return order[:max_panels], note


def samples_us(row):
    xs = row.get("samples_s")
    xs = [float(x) * 1e6 for x in xs if positive(x)] if isinstance(xs, list) else []
    return sorted(xs) or [float(row["median_s"]) * 1e6]


def percentile(xs, p):
    k = (len(xs) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def fmt_us(v):
    if v >= 100:
        return "%.0f" % v
    if v >= 10:
        return "%.1f" % v
    return "%.2f" % v


def import_matplotlib():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker, transforms
        return matplotlib, plt, ticker, transforms
    except ImportError as e:
        err = e
    # Once only: the guard holds the interpreter that tried first.
    here = sys.executable or "python3"
    first = os.environ.get(REEXEC_GUARD)
    if (not first and os.access(SYSTEM_PYTHON, os.X_OK)
            and os.path.realpath(SYSTEM_PYTHON) != os.path.realpath(here)):
        env = dict(os.environ, **{REEXEC_GUARD: here})
        sys.stdout.flush()
        try:
            os.execve(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:], env)
        except OSError:
            pass
    die("matplotlib is not importable by %s%s (%s); install the Debian package "
        "python3-matplotlib (apt-get install python3-matplotlib) or 'pip install matplotlib'"
        % (here, " nor by " + first if first and os.sep in first and first != here else "", err))


def draw_panel(ax, name, group, mpl):
    _, _, ticker, transforms = mpl
    data = {t: samples_us(group[t]) for t in ROWS if t in group}
    allv = [v for xs in data.values() for v in xs]
    lo, hi = min(allv), max(allv)
    log = lo > 0 and hi / lo > LOG_SPREAD
    fwd = math.log10 if log else (lambda v: v)
    inv = (lambda v: 10 ** v) if log else (lambda v: v)
    rng = random.Random(1)
    base_med = float(group["baseline"]["median_s"]) * 1e6 if "baseline" in group else None
    ylabels = []
    for y, t in enumerate(ROWS):
        c = COLOURS[t]
        if t not in data:
            ylabels.append(t)
            ax.text(0.5, y, "no %s data" % t, transform=transforms.blended_transform_factory(
                ax.transAxes, ax.transData), ha="center", va="center", color="#999999",
                fontsize=10, style="italic")
            continue
        row, xs = group[t], data[t]
        n = len(xs)
        ylabels.append("%s\nn=%d" % (t, n) if n > 1 else t)
        q1, q3 = percentile(xs, 0.25), percentile(xs, 0.75)
        med = float(row["median_s"]) * 1e6
        if n >= VIOLIN_MIN_SAMPLES:
            # Histogram violin, binned where the axis is linear (log or not).
            bins = 48
            a, b = fwd(xs[0]), fwd(xs[-1])
            width = (b - a) / bins or 1.0
            counts = [0] * bins
            for v in xs:
                counts[min(int((fwd(v) - a) / width), bins - 1)] += 1
            sm = [(counts[max(i - 1, 0)] + 2 * counts[i] + counts[min(i + 1, bins - 1)]) / 4.0
                  for i in range(bins)]
            top = max(sm) or 1.0
            px = [inv(a)] + [inv(a + (i + 0.5) * width) for i in range(bins)] + [inv(b)]
            half = [0.0] + [0.42 * s / top for s in sm] + [0.0]
            ax.fill_between(px, [y - h for h in half], [y + h for h in half],
                            color=c, alpha=0.35, linewidth=0)
            wl, wh = percentile(xs, 0.01), percentile(xs, 0.99)
            box_h = 0.16
            tail = [v for v in xs if v < wl or v > wh]
            if len(tail) > MAX_POINTS:
                tail = rng.sample(tail, MAX_POINTS)
            ax.scatter(tail, [y + rng.uniform(-0.08, 0.08) for _ in tail], s=7, color=c,
                       alpha=0.5, linewidths=0, zorder=3)
        else:
            iqr = q3 - q1
            wl = min(v for v in xs if v >= q1 - 1.5 * iqr)
            wh = max(v for v in xs if v <= q3 + 1.5 * iqr)
            box_h = 0.5
            pts = xs if n <= MAX_POINTS else rng.sample(xs, MAX_POINTS)
            ax.scatter(pts, [y + rng.uniform(-0.2, 0.2) for _ in pts], s=22, color=c,
                       alpha=0.75 if n <= 50 else 0.4, edgecolors="white", linewidths=0.5,
                       zorder=3)
        ax.hlines(y, wl, q1, color=c, linewidth=1.5, zorder=2)
        ax.hlines(y, q3, wh, color=c, linewidth=1.5, zorder=2)
        ax.vlines([wl, wh], y - box_h / 4, y + box_h / 4, color=c, linewidth=1.5, zorder=2)
        ax.barh(y, q3 - q1, left=q1, height=box_h, color=c, alpha=0.25, edgecolor=c,
                linewidth=1.5, zorder=2)
        ax.vlines(med, y - 0.3, y + 0.3, color="black", linewidth=3, zorder=4)
        text = "%s µs" % fmt_us(med)
        if isinstance(row.get("vs_baseline"), (int, float)):
            text += "   ×%.2f base" % row["vs_baseline"]
        if isinstance(row.get("vs_copy"), (int, float)):
            text += "   ×%.2f copy" % row["vs_copy"]
        at = transforms.blended_transform_factory(ax.transAxes, ax.transData)
        weight = "bold" if t != "baseline" else "normal"
        if n >= VIOLIN_MIN_SAMPLES:
            ax.text(1.015, y - 0.1, text, transform=at, ha="left", va="center", fontsize=11,
                    fontweight=weight)
            ax.text(1.015, y + 0.24, "p99 %s µs" % fmt_us(percentile(xs, 0.99)), transform=at,
                    ha="left", va="center", fontsize=9.5, color="#555555")
        else:
            ax.text(1.015, y, text, transform=at, ha="left", va="center", fontsize=11,
                    fontweight=weight)
    if base_med is not None:
        ax.axvline(base_med, color=COLOURS["baseline"], linestyle="--", linewidth=1.3, zorder=1)
    ax.set_yticks(range(len(ROWS)))
    ax.set_yticklabels(ylabels, fontsize=10.5)
    for lab, t in zip(ax.get_yticklabels(), ROWS):
        lab.set_color(COLOURS[t])
        lab.set_fontweight("bold")
    ax.set_ylim(len(ROWS) - 0.45, -0.55)  # baseline on top
    if log:
        ax.set_xscale("log")
        ax.set_xlim(lo / 1.25, hi * 1.25)
        ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: "%g" % v))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    else:
        pad = (hi - lo) * 0.08 or hi * 0.05 or 1.0
        ax.set_xlim(max(lo - pad, 0), hi + pad)
    ax.set_xlabel("µs per launch" + (" (log scale)" if log else ""), fontsize=10.5)
    ax.tick_params(axis="x", labelsize=10)
    ax.grid(axis="x", which="major", color="#dddddd", linewidth=0.8)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title(display_name(name), loc="left", fontsize=13, fontweight="bold")


def plot_paired(data, path, out):
    """The panels of a kle-interleaved.json (see the module docstring)."""
    paired = [p for p in data.get("paired", []) if isinstance(p, dict)]
    if not paired:
        die("%s has no paired differences (run bench/kle-compare.py --interleave first)"
            % path)
    mpl = import_matplotlib()
    plt = mpl[1]
    # One panel per benchmark and measure (end_to_end; device_span and
    # kernel_only with the kernel timer).
    for p in paired:
        p.setdefault("measure", "end_to_end")
    names = sorted({(p["benchmark"], p["measure"]) for p in paired},
                   key=lambda k: (natural_key(k[0]), k[1]))
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    fig, axes = plt.subplots(len(names), 1, figsize=(11.5, 1.0 + 2.4 * len(names)),
                             squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        rows = [p for p in paired if (p["benchmark"], p["measure"]) == name]
        rows.sort(key=lambda p: (p["reference"], ROWS.index(p["transport"])
                                 if p["transport"] in ROWS else 99))
        for y, p in enumerate(rows):
            m, lo, hi = p["median_diff_us"], p["ci_low_us"], p["ci_high_us"]
            c = COLOURS.get(p["transport"], "#333333")
            ax.errorbar([m], [y], xerr=[[m - lo], [hi - m]], fmt="o", color=c, capsize=4)
            ax.text(1.01, y, "%s  %s [%s..%s]" % (p.get("verdict", ""), fmt_us(m), fmt_us(lo),
                                                   fmt_us(hi)),
                    transform=transforms_blend(ax, mpl), va="center", fontsize=8)
        ax.axvline(0, color="#7f7f7f", ls="--", lw=1)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(["%s - %s" % (p["transport"], p["reference"]) for p in rows])
        ax.invert_yaxis()
        ax.set_title("%s (%s)" % (name[0], name[1].replace("_", " ")), loc="left",
                     fontsize=11)
        ax.set_xlabel("median paired difference per cycle (us), 95% block-bootstrap CI")
    title = "KLE transports interleaved in one process (git %s)\ndevice %s, %s" % (
        meta.get("git") or "?", meta.get("device", "?"), meta.get("driver", "?"))
    if meta.get("host_side_overhead_only"):
        title += " \u2014 HOST-SIDE OVERHEAD ONLY"
    fig.suptitle(title, fontsize=10, fontweight="bold", x=0.45)
    fig.tight_layout(rect=(0, 0, 0.8, 1 - 0.55 / (1.0 + 2.4 * len(names))))
    try:
        fig.savefig(out, dpi=120, facecolor="white")
    except (OSError, ValueError, ImportError) as e:
        die("cannot write %s: %s" % (out, getattr(e, "strerror", None) or e))
    print("wrote %s (%d panel%s: %s)" % (out, len(names), "" if len(names) == 1 else "s",
                                         ", ".join("%s (%s)" % n for n in names)))


def transforms_blend(ax, mpl):
    """x in axes fraction, y in data: labels right of the panel."""
    return mpl[3].blended_transform_factory(ax.transAxes, ax.transData)


def main():
    ap = Parser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("json", help="kle-compare.json written by bench/kle-compare.py")
    ap.add_argument("-o", "--output",
                    help="file to write, in the format of its extension (png, svg, pdf, ...; "
                         "none: PNG; default: kle-compare.png next to the JSON)")
    ap.add_argument("--benchmarks", metavar="REGEX", help="plot the benchmarks matching REGEX")
    ap.add_argument("--max-panels", type=int, default=6, help="at most this many panels (6)")
    a = ap.parse_args()
    if a.max_panels < 1:
        die("--max-panels must be at least 1")
    try:
        with open(a.json) as f:
            head = json.load(f)
    except (OSError, ValueError):
        head = None  # load() says why
    if isinstance(head, dict) and "paired" in head and "results" not in head:
        return plot_paired(head, a.json, a.output or os.path.join(
            os.path.dirname(os.path.abspath(a.json)), "kle-interleaved.png"))
    meta, rows, warnings = load(a.json)
    groups = groups_of(rows)
    names, note = choose(groups, a.benchmarks, a.max_panels)
    out = a.output or os.path.join(os.path.dirname(os.path.abspath(a.json)), "kle-compare.png")

    mpl = import_matplotlib()  # may re-execute this script under /usr/bin/python3
    plt = mpl[1]
    for w in warnings:
        print("%s: warning: %s" % (PROG, w), file=sys.stderr)
    # The format follows the extension (as savefig infers it); without one,
    # PNG under exactly the name given (savefig would append ".png").
    ext = os.path.splitext(out)[1][1:].lower()
    formats = plt.gcf().canvas.get_supported_filetypes()
    plt.close("all")
    if ext and ext not in formats:
        die("cannot write %s: unknown format %r (from its extension; matplotlib writes %s)"
            % (out, ext, ", ".join(sorted(formats))))
    fmt = ext or "png"
    n = len(names)
    ncols = 1 if n <= 4 else 2
    nrows = (n + ncols - 1) // ncols
    fig_w = 11.5 * ncols

    # How to read it, as a footer of one to three lines.
    most = [max(len(samples_us(r)) for r in groups[x].values()) for x in names]
    how = []
    if any(m < VIOLIN_MIN_SAMPLES for m in most):
        how.append("box = quartiles, whiskers 1.5 IQR, dots = samples")
    if any(m >= VIOLIN_MIN_SAMPLES for m in most):
        how.append("violin = histogram of samples, narrow box = quartiles, "
                   "whiskers p1–p99, dots beyond")
    how.append("black bar = median; dashed = baseline median; ×base = vs no-KLE kernel, "
               "×copy = vs copy transport (<1 = faster)")
    per_line = int(fig_w * 72 / (9.5 * 0.62))  # characters of 9.5 pt text per line
    lines = [how[0]]
    for h in how[1:]:
        if len(lines[-1]) + 7 + len(h) <= per_line:
            lines[-1] += "   ·   " + h
        else:
            lines.append(h)

    host_only = bool(meta.get("host_side_overhead_only"))
    head_in = 0.95 + (0.35 if host_only else 0.0)
    foot_in = 0.12 + 0.2 * len(lines)
    panel_in = 2.8
    fig_h = head_in + foot_in + panel_in * nrows
    fig, axes = plt.subplots(nrows, ncols, figsize=(fig_w, fig_h), squeeze=False)
    for i, name in enumerate(names):
        draw_panel(axes[i // ncols][i % ncols], name, groups[name], mpl)  # row-major
    for j in range(n, nrows * ncols):
        axes[j // ncols][j % ncols].set_visible(False)

    try:
        when = meta.get("date") or time.strftime("%Y-%m-%d %H:%M", time.localtime(
            os.path.getmtime(a.json)))
    except OSError:
        when = "?"
    title = "KLE transports: time per launch on device %s, %s" % (
        meta.get("device", "?"), meta.get("driver", "driver ?"))
    sub = "git %s · LLVM %s · %s rounds · %s · %s" % (
        meta.get("git") or "?", meta.get("llvm", "?"), meta.get("rounds", "?"),
        meta.get("machine", "?"), when)
    fig.text(0.5, 1 - 0.22 / fig_h, title, ha="center", va="top",
             fontsize=15 if len(title) * 15 * 0.62 < fig_w * 72 else 12, fontweight="bold")
    fig.text(0.5, 1 - 0.62 / fig_h, sub, ha="center", va="top", fontsize=11, color="#444444")
    if host_only:
        fig.text(0.5, 1 - 0.98 / fig_h, "HOST-SIDE OVERHEAD ONLY — no kernel ran on a GPU",
                 ha="center", va="top", fontsize=14, fontweight="bold", color="#cc0000")
    fig.text(0.5, 0.1 / fig_h, "\n".join(lines), ha="center", va="bottom", fontsize=9.5,
             color="#555555", linespacing=1.4)
    fig.tight_layout(rect=(0, foot_in / fig_h, 1, 1 - head_in / fig_h), h_pad=1.6, w_pad=3.0)
    try:
        fig.savefig(out, dpi=120, facecolor="white", format=fmt)
    except (OSError, ValueError, ImportError) as e:
        die("cannot write %s: %s" % (out, getattr(e, "strerror", None) or e))
    if note:
        print("%s: note: %s; pick others with --benchmarks REGEX" % (PROG, note), file=sys.stderr)
    shown = [display_name(x) for x in names]
    print("wrote %s (%d panel%s: %s)" % (out, n, "" if n == 1 else "s", ", ".join(shown)))


if __name__ == "__main__":
    main()
