"""What fast5_dump must print, read with ont-fast5-api (the reference).

python fast5_expected.py PATH... > expected.tsv

Folders are walked as h5turbo_fast5_open walks them (recursively, entries by name,
*.fast5). Files ont-fast5-api cannot read (no raw signal) are reported on stderr.
"""

import math
import sys
from pathlib import Path

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


def main():
    print("read_id\tn_samples\tsignal_sum\tdigitisation\toffset\trange\tsampling_rate")
    for path in files(sys.argv[1:]):
        try:
            with get_fast5_file(str(path), mode="r") as f5:
                for read in f5.get_reads():
                    signal = read.get_raw_data()
                    try:
                        channel = read.get_channel_info()
                    except Exception:  # a read without channel_id: h5turbo gives NaN
                        channel = {}
                    values = [float(channel.get(k, math.nan)) for k in ("digitisation", "offset", "range", "sampling_rate")]
                    print("\t".join([read.read_id, str(len(signal)), str(int(signal.astype("int64").sum()))] + [g(v) for v in values]))
        except Exception as e:
            print(f"{path}: {type(e).__name__}: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
