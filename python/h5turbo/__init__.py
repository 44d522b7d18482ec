"""h5turbo: a lock-free, pure-Rust HDF5 reader with a parallel chunk engine.

The API follows h5py's read side::

    import h5turbo
    with h5turbo.File("data.h5") as f:
        x = f["matrix"][1000:2000, ::2]          # numpy-style selection, read in parallel
        f["matrix"].read(out=buffer, threads=8)  # fill a caller's array directly
"""

import atexit as _atexit
import os as _os
from importlib.metadata import PackageNotFoundError, version as _dist_version

from . import _native

from ._native import (ClosedError, Error, FileObjectError, FormatError, OutOfMemoryError, TooManyLinksError,
                      UnsupportedError, default_threads)
from .objects.dataset import Dataset
from .objects.attrs import AttributeManager
from .objects.file import File, ReadOnlyError
from .compute.sparse import SparseDataset, is_sparse_group
from .objects.group import Datatype, Group
from .objects.references import Reference, RegionReference, ref_dtype, regionref_dtype
from .objects.types import Empty, ExternalLink, HardLink, SoftLink
from .objects.special_dtypes import (
    check_complex_dtype, check_dtype, check_enum_dtype, check_opaque_dtype, check_ref_dtype,
    check_string_dtype, check_vlen_dtype, complex_compat_dtype, enum_dtype, is_hdf5, opaque_dtype,
    special_dtype, string_dtype, string_info, vlen_dtype,
)
from .readahead import io_depth
from .formats import Fast5Error, Fast5Index, Fast5Read, read_10x_h5, read_fast5, read_h5ad, read_loom
from .writing.write import ArgumentError, auto_chunks, write
from .writing.h5ad import write_h5ad

# A fork waits until no native call runs, and none starts until it is done: a child
# then never inherits a lock a parent thread held mid-read (crates/h5turbo-py/src/fork_gate.rs).
if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(before=_native.fork_prepare, after_in_parent=_native.fork_parent,
                         after_in_child=_native.fork_child)

# A read still running in a daemon thread when Python exits must not take the GIL back
# (Python would end that thread with pthread_exit, which aborted the process): from the
# exit handlers on, the native side parks such threads (crates/h5turbo-py/src/shutdown.rs).
_atexit.register(_native.prepare_exit)

try:
    __version__ = _dist_version("h5turbo")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "File", "Group", "Dataset", "Datatype", "AttributeManager", "SparseDataset", "is_sparse_group",
    "Empty", "HardLink", "SoftLink", "ExternalLink",
    "Reference", "RegionReference", "ref_dtype", "regionref_dtype",
    "string_dtype", "check_string_dtype", "string_info", "vlen_dtype", "check_vlen_dtype",
    "enum_dtype", "check_enum_dtype", "opaque_dtype", "check_opaque_dtype", "check_ref_dtype",
    "special_dtype", "check_dtype", "check_complex_dtype", "complex_compat_dtype", "is_hdf5",
    "Error", "FormatError", "UnsupportedError", "ClosedError", "ReadOnlyError",
    "FileObjectError", "TooManyLinksError", "OutOfMemoryError",
    "default_threads", "io_depth", "__version__",
    "read_h5ad", "read_10x_h5", "read_loom",
    "read_fast5", "Fast5Index", "Fast5Read", "Fast5Error",
    "write", "write_h5ad", "auto_chunks", "ArgumentError",
]
