"""Writing a whole new file safely: into a temporary file in the destination's folder,
renamed over the destination only once complete. A write that fails or is
interrupted leaves the destination as it was (and removes the temporary file)."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

__all__ = ["replacing"]


@contextmanager
def replacing(path, exclusive: bool = False) -> Iterator[Path]:
    """Yield a temporary path to write the new file to; on a normal exit, give it the
    destination's owner, group and permissions (a new file: 0666 less the umask, as
    ``open`` would) and
    rename it to ``path``. A symbolic link at ``path`` keeps pointing where it did: its
    target is replaced. ``exclusive``: refuse a destination that exists (h5py's "w-")."""
    path = os.fsdecode(path)  # a bytes name too, as h5py takes
    dst = Path(os.path.realpath(path))
    if dst.is_dir():
        raise IsADirectoryError(f"{path}: is a directory, not a file")
    if not dst.parent.is_dir():
        raise FileNotFoundError(f"{dst.parent}: no such folder")
    if exclusive and dst.exists():
        raise FileExistsError(f"{path}: exists already (mode 'w-' or 'x' never replaces a file)")
    if dst.exists() and not os.access(dst, os.W_OK):
        # renaming over it needs only the folder's permission: refuse as h5py (which
        # opens it for writing) does, rather than replace a file its owner protected
        raise PermissionError(errno.EACCES, f"{path}: the file is write-protected; not replaced")
    try:
        fd, name = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".h5turbo-tmp", dir=dst.parent)
    except OSError as exc:  # an unwritable folder: say so, naming the destination
        raise type(exc)(exc.errno, f"{path}: cannot create a file in {dst.parent} ({exc.strerror})") from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        _keep_owner(tmp, dst)
        os.chmod(tmp, _mode_for(dst))
        os.replace(tmp, dst)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        _name_destination(exc, tmp, path)
        raise


def _name_destination(exc: BaseException, tmp: Path, path) -> None:
    """Messages that name the temporary file name the destination instead: that is
    the file the caller knows."""
    def swap(value):
        return value.replace(str(tmp), str(path)) if isinstance(value, str) else value

    exc.args = tuple(swap(a) for a in exc.args)
    if isinstance(exc, OSError):
        # str() of an OSError is made from these, not from args
        for name in ("strerror", "filename", "filename2"):
            if isinstance(getattr(exc, name, None), str):
                setattr(exc, name, swap(getattr(exc, name)))


def _keep_owner(tmp: Path, dst: Path) -> None:
    """Give the new file the owner and group of the file it replaces, as h5py (which
    writes into that file) keeps them, where this process may (root may; others may
    change the group to one of their own); before the permissions, which a change of
    owner can clear."""
    try:
        old = os.stat(dst)
    except FileNotFoundError:
        return
    new = os.stat(tmp)
    for uid, gid in ((old.st_uid, old.st_gid), (-1, old.st_gid)):
        if (new.st_uid, new.st_gid) == (old.st_uid, old.st_gid):
            return
        try:
            os.chown(tmp, uid, gid)
            return
        except PermissionError:
            continue


def _mode_for(dst: Path) -> int:
    """The permission bits the new file should have: those of the file it replaces."""
    try:
        return stat.S_IMODE(os.stat(dst).st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """This process's umask, read without changing it where the system says it
    (changing it, the only portable way, races with other threads creating files)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
