#!/usr/bin/env python3
"""For test/bench/plot.test: per file, "<name> PNG <width>x<height> <kB>kB"
read from the signature and the IHDR chunk, or "<name> not a PNG"."""
import os
import struct
import sys

for path in sys.argv[1:]:
    with open(path, "rb") as f:
        head = f.read(24)
    name = os.path.basename(path)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        print(name, "not a PNG")
        continue
    w, h = struct.unpack(">II", head[16:24])
    print("%s PNG %dx%d %dkB" % (name, w, h, os.path.getsize(path) // 1000))
