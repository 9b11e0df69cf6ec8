"""The floor: what the disk and CPU allow for the same bytes, without any package-manager logic.

  floor.py unzip DST WHEEL...   parallel extraction (one process per core, members balanced by size;
                                zlib inflate in C, 1 MiB copies, no hashing, no fsync)
  floor.py read FILE...         parallel sequential read of the files (page cache -> user space)
"""
import os
import shutil
import sys
import zipfile
from concurrent.futures import ProcessPoolExecutor


def _extract(job):
    dst, items = job
    made = set()
    for wheel, names in items:
        with zipfile.ZipFile(wheel) as z:
            for name in names:
                target = os.path.join(dst, name)
                d = os.path.dirname(target)
                if d not in made:
                    os.makedirs(d, exist_ok=True)
                    made.add(d)
                with z.open(name) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
    return True


def unzip(dst, wheels, jobs):
    members = []
    for w in wheels:
        with zipfile.ZipFile(w) as z:
            members += [(i.file_size + 4096, w, i.filename) for i in z.infolist() if not i.is_dir()]
    members.sort(reverse=True)
    buckets = [[0, {}] for _ in range(jobs)]
    for size, w, name in members:  # greedy: biggest member to the emptiest worker
        b = min(buckets, key=lambda x: x[0])
        b[0] += size
        b[1].setdefault(w, []).append(name)
    work = [(dst, list(b[1].items())) for b in buckets if b[1]]
    with ProcessPoolExecutor(len(work)) as ex:
        list(ex.map(_extract, work))


def _read(paths):
    n = 0
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while chunk := f.read(1 << 20):
                n += len(chunk)
    return n


def read(files, jobs):
    sized = sorted(((os.path.getsize(f), f) for f in files), reverse=True)
    buckets = [[0, []] for _ in range(jobs)]
    for size, f in sized:
        b = min(buckets, key=lambda x: x[0])
        b[0] += size
        b[1].append(f)
    with ProcessPoolExecutor(jobs) as ex:
        return sum(ex.map(_read, [b[1] for b in buckets if b[1]]))


if __name__ == "__main__":
    jobs = os.cpu_count() or 1
    if sys.argv[1] == "unzip":
        unzip(sys.argv[2], sys.argv[3:], jobs)
    elif sys.argv[1] == "read":
        read(sys.argv[2:], jobs)
    else:
        sys.exit(__doc__)
