#!/usr/bin/env python3
"""Relabel the arch of fatbin entries in place: a build that lacks an arch, made from a real one.

    relabel_fatbin.py FROM TO FILE...     e.g. relabel_fatbin.py 90 89 libtorch_cuda.so

Every fatbin container in the file (registered in .nv_fatbin or embedded anywhere) is found by its
header (magic 0xBA55ED50, version 1, header size 16) and walked entry by entry; the arch field of each
SASS (kind 2) and PTX (kind 1) entry whose arch is FROM is set to TO. The payload (the cubin, whose
own ELF header still says FROM) is left as it is: the CUDA runtime picks an image by the entry header,
so a device of FROM finds no image ("no kernel image is available for execution on the device").
Layouts: docs/kernels.md ("Container layout", "Entry header"). Prints the number of entries changed
per file; exits 1 when a file has none.
"""
import mmap
import struct
import sys

MAGIC = struct.pack("<IHH", 0xBA55ED50, 1, 16)


def relabel_buffer(buf, old, new):
    """Relabels in `buf` (a bytearray or a writable mmap); returns the number of entries changed."""
    changed = 0
    size = len(buf)
    pos = buf.find(MAGIC)
    while pos != -1:
        (fat_size,) = struct.unpack_from("<Q", buf, pos + 8)
        end = pos + 16 + fat_size
        nxt = pos + 16
        if fat_size and end <= size:
            e = pos + 16
            while e + 64 <= end:
                kind, _ver, hsize, payload = struct.unpack_from("<HHIQ", buf, e)
                if hsize < 64 or hsize % 8 or e + hsize + payload > end:
                    break
                (arch,) = struct.unpack_from("<I", buf, e + 0x1C)
                if kind in (1, 2) and arch == old:
                    struct.pack_into("<I", buf, e + 0x1C, new)
                    changed += 1
                e += hsize + payload
            nxt = max(nxt, e)
        pos = buf.find(MAGIC, nxt)
    return changed


def relabel(path, old, new):
    with open(path, "r+b") as f:
        if f.seek(0, 2) == 0:
            return 0
        mm = mmap.mmap(f.fileno(), 0)
        try:
            return relabel_buffer(mm, old, new)
        finally:
            mm.flush()
            mm.close()


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    old, new = int(argv[1]), int(argv[2])
    rc = 0
    for path in argv[3:]:
        n = relabel(path, old, new)
        print(f"{path}: {n} entries sm/compute_{old} -> {new}")
        if n == 0:
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
