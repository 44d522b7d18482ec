"""The Python readers of bench.py, each printing "reads samples signal_sum [channel_sum]"
as the C programs do (channel values summed as float32, as f5c reads them).

python python_readers.py h5turbo LISTFILE THREADS   every read of the fast5 files listed
python python_readers.py pod5 FILE                  every read of a POD5 file (pod5.Reader;
                                                    no channel sum: POD5 keeps a scale,
                                                    not digitisation and range)
python python_readers.py h5turbo-by-id LISTFILE READLIST THREADS
                                                    the reads of READLIST (read_id<TAB>path
                                                    lines) in its order, by id:
                                                    h5turbo.Fast5Index.get_reads
python python_readers.py ont-by-id READLIST         the same with ont_fast5_api: each file
                                                    opened once and kept, get_read per id
"""

import sys

import numpy as np


def h5turbo_reads(listing: str, threads: int) -> str:
    import h5turbo
    paths = [line for line in open(listing).read().splitlines() if line]
    return totals((r.signal, r.channel) for r in h5turbo.read_fast5(paths, threads=threads, on_error="raise"))


def totals(reads) -> str:
    """The line the C programs print, for (signal, channel dict) pairs."""
    count = samples = signal_sum = 0
    channel_sum = 0.0
    for signal, channel in reads:
        count, samples = count + 1, samples + len(signal)
        signal_sum += int(signal.sum(dtype=np.int64))
        channel_sum += float(sum(np.float32(channel[k]) for k in ("digitisation", "offset", "range", "sampling_rate")))
    return f"{count} {samples} {signal_sum} {channel_sum:.6f}"


def asked_ids(read_list: str) -> list[tuple[str, str]]:
    return [tuple(line.split("\t")) for line in open(read_list).read().splitlines() if line]


def h5turbo_by_id(listing: str, read_list: str, threads: int) -> str:
    import h5turbo
    paths = [line for line in open(listing).read().splitlines() if line]
    index = h5turbo.Fast5Index(paths, threads=threads)
    ids = [read_id for read_id, _ in asked_ids(read_list)]
    return totals((r.signal, r.channel) for r in index.get_reads(ids, on_error="raise"))


def ont_by_id(read_list: str) -> str:
    from ont_fast5_api.fast5_interface import get_fast5_file
    opened = {}

    def read(read_id: str, path: str):
        if path not in opened:
            opened[path] = get_fast5_file(path, mode="r")
        r = opened[path].get_read(read_id)
        return r.get_raw_data(), r.get_channel_info()
    return totals(read(*asked) for asked in asked_ids(read_list))


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
    readers = {"h5turbo": lambda listing, threads: h5turbo_reads(listing, int(threads)), "pod5": pod5_reads,
               "h5turbo-by-id": lambda listing, reads, threads: h5turbo_by_id(listing, reads, int(threads)),
               "ont-by-id": ont_by_id}
    print(readers[kind](*rest))
