"""What fast5_dump must print, read with ont-fast5-api (the reference).

python fast5_expected.py [-a] PATH... > expected.tsv   (-a: fast5_dump -a's extra columns)

Folders are walked as h5turbo_fast5_open walks them (recursively, entries by name,
*.fast5). Files ont-fast5-api cannot read (no raw signal) are reported on stderr.
"""

import math
import sys
from pathlib import Path

import numpy as np
from ont_fast5_api.fast5_interface import get_fast5_file


def files(paths):
    for path in map(Path, paths):
        if path.is_dir():
            yield from walk(path)
        else:
            yield path


def walk(folder):
    for entry in sorted(folder.iterdir(), key=lambda p: str(p).encode()):
        if entry.is_dir():
            yield from walk(entry)
        elif entry.suffix == ".fast5":
            yield entry


def g(value):
    return "nan" if math.isnan(value) else "%.17g" % value


def text(value):
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return str(value)


def extra_columns(read, signal, channel):
    """channel_number, read_number, start_time, duration (0 or "" when absent, as
    h5turbo gives them) and the position-weighted checksum, modulo 2^64."""
    raw = read.handle[read.raw_dataset_group_name].attrs
    weights = np.arange(1, len(signal) + 1, dtype=np.uint64)
    checksum = int((weights * signal.astype(np.int64).astype(np.uint64)).sum(dtype=np.uint64))
    return [text(channel.get("channel_number", "")), str(int(raw.get("read_number", 0))),
            str(int(raw.get("start_time", 0))), str(int(raw.get("duration", 0))), str(checksum)]


def main():
    args = sys.argv[1:]
    extra = bool(args) and args[0] == "-a"
    args = args[extra:]
    header = "read_id\tn_samples\tsignal_sum\tdigitisation\toffset\trange\tsampling_rate"
    print(header + ("\tchannel_number\tread_number\tstart_time\tduration\tsignal_checksum" if extra else ""))
    for path in files(args):
        try:
            with get_fast5_file(str(path), mode="r") as f5:
                for read in f5.get_reads():
                    signal = read.get_raw_data()
                    try:
                        channel = read.get_channel_info()
                    except Exception:  # a read without channel_id: h5turbo gives NaN
                        channel = {}
                    values = [float(channel.get(k, math.nan)) for k in ("digitisation", "offset", "range", "sampling_rate")]
                    columns = [read.read_id, str(len(signal)), str(int(signal.astype("int64").sum()))] + [g(v) for v in values]
                    if extra:
                        columns += extra_columns(read, signal, channel)
                    print("\t".join(columns))
        except Exception as e:
            print(f"{path}: {type(e).__name__}: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
