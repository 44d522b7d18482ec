"""The Python readers of bench.py, each printing "reads samples signal_sum [channel_sum]"
as the C programs do (channel values summed as float32, as f5c reads them).

python python_readers.py h5turbo LISTFILE THREADS   every read of the fast5 files listed
python python_readers.py pod5 FILE                  every read of a POD5 file (pod5.Reader;
                                                    no channel sum: POD5 keeps a scale,
                                                    not digitisation and range)
"""

import sys

import numpy as np


def h5turbo_reads(listing: str, threads: int) -> str:
    import h5turbo
    paths = [line for line in open(listing).read().splitlines() if line]
    reads = samples = signal_sum = 0
    channel_sum = 0.0
    for r in h5turbo.read_fast5(paths, threads=threads, on_error="raise"):
        reads, samples = reads + 1, samples + len(r.signal)
        signal_sum += int(r.signal.sum(dtype=np.int64))
        channel_sum += float(sum(np.float32(r.channel[k]) for k in ("digitisation", "offset", "range", "sampling_rate")))
    return f"{reads} {samples} {signal_sum} {channel_sum:.6f}"


def pod5_reads(path: str) -> str:
    import pod5
    reads = samples = signal_sum = 0
    with pod5.Reader(path) as reader:
        for r in reader.reads():
            signal = r.signal
            reads, samples = reads + 1, samples + len(signal)
            signal_sum += int(signal.sum(dtype=np.int64))
    return f"{reads} {samples} {signal_sum}"


if __name__ == "__main__":
    kind, *rest = sys.argv[1:]
    print(h5turbo_reads(rest[0], int(rest[1])) if kind == "h5turbo" else pod5_reads(rest[0]))
