"""klebench.py plot: draw a compare run's kle-interleaved.json, one panel per
benchmark and measure of the paired differences with their 95% CIs, in the
format of -o's extension (none: PNG); default kle-interleaved.png next to the
JSON. Errors are one line, exit status 2.
"""
import argparse
import json
import os

from kle import common
from kle.common import TRANSPORTS

# Top to bottom; the Okabe-Ito colour-blind-safe palette.
ROWS = ["baseline"] + list(TRANSPORTS) + ["floor"]
COLOURS = {"baseline": "#7f7f7f", "zerocopy": "#0072B2", "staged": "#009E73",
           "copy": "#D55E00", "resident": "#CC79A7", "floor": "#000000"}

def die(msg):
    common.die(common.PROG, msg, 2)

class Parser(argparse.ArgumentParser):
    def error(self, message):
        die(message + " (usage: klebench.py plot <kle-interleaved.json> [-o out.png|.svg|.pdf])")

def fmt_us(v):
    return "%.0f" % v if abs(v) >= 100 else "%.1f" % v if abs(v) >= 10 else "%.2f" % v

def _matplotlib():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import transforms
    return plt, transforms

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
    paired = [p for p in data.get("paired", []) if isinstance(p, dict)] \
        if isinstance(data, dict) else []
    if not paired:
        die("%s has no paired differences (run bench/klebench.py compare first)" % path)
    return data, paired

def main(argv):
    ap = Parser(prog=common.PROG, description=common.summary(__doc__))
    ap.add_argument("json", help="kle-interleaved.json written by klebench.py compare")
    ap.add_argument("-o", "--output", help="file to write, in the format of its extension "
                    "(default: kle-interleaved.png next to the JSON)")
    a = ap.parse_args(argv)
    data, paired = load(a.json)
    out = a.output or os.path.join(os.path.dirname(os.path.abspath(a.json)),
                                   "kle-interleaved.png")
    plt, transforms = common.require(_matplotlib, ["matplotlib"], common.PROG)
    ext = os.path.splitext(out)[1][1:].lower()
    formats = plt.gcf().canvas.get_supported_filetypes()
    plt.close("all")
    if ext and ext not in formats:
        die("cannot write %s: unknown format %r (from its extension; matplotlib writes %s)"
            % (out, ext, ", ".join(sorted(formats))))
    for p in paired:
        p.setdefault("measure", "end_to_end")
    names = sorted({(p["benchmark"], p["measure"]) for p in paired},
                   key=lambda k: (common.natural_key(k[0]), k[1]))
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    fig, axes = plt.subplots(len(names), 1, figsize=(11.5, 1.0 + 2.4 * len(names)),
                             squeeze=False)
    unit = lambda p: p["transport"].split("/")[0]
    for ax, name in zip(axes[:, 0], names):
        rows = sorted((p for p in paired if (p["benchmark"], p["measure"]) == name),
                      key=lambda p: (p["reference"],
                                     ROWS.index(unit(p)) if unit(p) in ROWS else 99))
        right = transforms.blended_transform_factory(ax.transAxes, ax.transData)
        for y, p in enumerate(rows):
            m, lo, hi = p["median_diff_us"], p["ci_low_us"], p["ci_high_us"]
            ax.errorbar([m], [y], xerr=[[m - lo], [hi - m]], fmt="o", capsize=4,
                        color=COLOURS.get(unit(p), "#333333"))
            ax.text(1.01, y, "%s  %s [%s..%s]" % (p.get("verdict", ""), fmt_us(m), fmt_us(lo),
                                                   fmt_us(hi)),
                    transform=right, va="center", fontsize=8)
        ax.axvline(0, color="#7f7f7f", ls="--", lw=1)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels(["%s - %s" % (p["transport"], p["reference"]) for p in rows])
        ax.invert_yaxis()
        ax.set_title("%s (%s)" % (name[0], name[1].replace("_", " ")), loc="left", fontsize=11)
        ax.set_xlabel("median paired difference per cycle (us), 95% block-bootstrap CI")
    title = "KLE transports interleaved in one process (git %s)\ndevice %s, %s" % (
        meta.get("git") or "?", meta.get("device", "?"), meta.get("driver", "?"))
    if meta.get("host_side_overhead_only"):
        title += " \u2014 HOST-SIDE OVERHEAD ONLY"
    fig.suptitle(title, fontsize=10, fontweight="bold", x=0.45)
    fig.tight_layout(rect=(0, 0, 0.8, 1 - 0.55 / (1.0 + 2.4 * len(names))))
    try:
        fig.savefig(out, dpi=120, facecolor="white", format=ext or "png")
    except (OSError, ValueError, ImportError) as e:
        die("cannot write %s: %s" % (out, getattr(e, "strerror", None) or e))
    print("wrote %s (%d panel%s: %s)" % (out, len(names), "" if len(names) == 1 else "s",
                                         ", ".join("%s (%s)" % n for n in names)))
    return 0
