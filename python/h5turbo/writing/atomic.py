"""Writing a whole new file safely: into a temporary file in the destination's folder,
published as the destination only once complete and on disk. A write that fails or
is interrupted leaves the destination as it was (and removes the temporary file).

How the finished file is published:

- replacing (h5py's "w"): renamed over the destination, which first gives the new
  file the old one's permissions, owner and extended attributes (POSIX ACLs too). Where
  the rename is refused (a sticky folder and another user's file, a file bind-mounted on
  its own, ...) or the folder takes no new file (read-only, but the file is writable),
  the finished file is copied over the destination in place, as h5py writes: that copy
  is the one case that is not atomic.
- exclusive ("w-", "x"): hard-linked to the destination, which fails if anything
  (a dangling symbolic link too) appeared there during the write; where the filesystem
  has no hard links, the name is claimed with O_EXCL and the file renamed onto it.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

__all__ = ["replacing", "TEMP_PREFIX", "TEMP_SUFFIX"]

# Temporary files are named ".h5turbo-XXXXXXXX.tmp": hidden, recognisable, and of a
# length that does not depend on the destination's (a name of 234-255 bytes plus a
# suffix passed the filesystem's 255-byte limit).
TEMP_PREFIX, TEMP_SUFFIX = ".h5turbo-", ".tmp"

# A folder that refuses a new file: the temporary file goes to the system's temp folder
# and is copied over the destination (which must exist and be writable).
_FOLDER_REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)
# A rename over the destination refused although the file may be written in place:
# sticky folders (EPERM), a bind-mounted file (EBUSY), another filesystem (EXDEV).
_RENAME_REFUSED = (errno.EPERM, errno.EACCES, errno.EBUSY, errno.EXDEV)
# Hard links unsupported (some FUSE, vfat, network filesystems) or not allowed here.
_NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK, errno.EXDEV)
# Extended attributes the filesystem or this process may not set: left out.
_XATTR_REFUSED = (errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM, errno.EACCES, errno.ENODATA, errno.E2BIG,
                  errno.ENOSPC, errno.ERANGE, errno.EINVAL)


@contextmanager
def replacing(path, exclusive: bool = False) -> Iterator[Path]:
    """Yield a temporary path to write the new file to; on a normal exit publish it as
    ``path`` (see the module's doc). A symbolic link at ``path`` keeps pointing where it
    did: its target is replaced. ``exclusive``: refuse a destination that exists or
    appears before the file is published (h5py's "w-"), dangling symbolic links too."""
    path = os.fsdecode(path)  # a bytes name too, as h5py takes
    if exclusive and os.path.lexists(path):
        raise _exists(path)
    dst = Path(os.path.realpath(path))
    if dst.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"{path}: is a directory, not a file")
    if not dst.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, f"{dst.parent}: no such folder")
    existed = dst.exists()
    if existed and not os.access(dst, os.W_OK):
        # renaming over it needs only the folder's permission: refuse as h5py (which
        # opens it for writing) does, rather than replace a file its owner protected
        raise PermissionError(errno.EACCES, f"{path}: the file is write-protected; not replaced")
    tmp, in_folder = _temporary_file(dst, path, may_write_in_place=existed and not exclusive)
    try:
        yield tmp
        _fsync(tmp)  # the data on disk before the name: a crash never publishes an empty file
        if exclusive:
            _publish_exclusive(tmp, dst, path)
        elif in_folder:
            _publish_replacing(tmp, dst, path)
        else:
            _write_in_place(tmp, dst, path)
    except BaseException as exc:
        _name_destination(exc, tmp, path)
        raise
    finally:
        tmp.unlink(missing_ok=True)


def _exists(path) -> FileExistsError:
    return FileExistsError(errno.EEXIST, f"{path}: exists already (mode 'w-' or 'x' never replaces a file)")


def _temporary_file(dst: Path, path, may_write_in_place: bool) -> tuple[Path, bool]:
    """A new empty temporary file and whether it is in ``dst``'s folder. Created as
    ``open`` creates a file (mode 0666, so the umask and the folder's default ACL
    apply); in the system temp folder where the destination's folder takes no new file
    but the existing destination may be written in place."""
    try:
        return _create_temporary(dst.parent), True
    except OSError as exc:
        refused = exc
    if may_write_in_place and refused.errno in _FOLDER_REFUSED:
        try:
            return _create_temporary(Path(tempfile.gettempdir())), False
        except OSError:
            pass
    raise type(refused)(refused.errno, f"{path}: cannot create a file in {dst.parent} ({refused.strerror})") from None


def _create_temporary(folder: Path) -> Path:
    for _ in range(100):
        name = folder / f"{TEMP_PREFIX}{secrets.token_hex(4)}{TEMP_SUFFIX}"
        try:
            _create_new(name)
            return name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"{folder}: no free temporary file name")


def _create_new(path: Path) -> None:
    """An empty file at ``path``, created as ``open`` creates one (mode 0666: the umask
    and the folder's default ACL apply); FileExistsError if anything has the name. (Python
    opens descriptors close-on-exec already.)"""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))


def _publish_replacing(tmp: Path, dst: Path, path) -> None:
    """Rename ``tmp`` over ``dst`` with the old file's metadata; where the rename is
    refused, write ``dst`` in place instead."""
    if dst.exists():
        _keep_metadata(tmp, dst)
    try:
        os.replace(tmp, dst)
    except OSError as exc:
        if exc.errno not in _RENAME_REFUSED or not dst.exists():
            raise
        _write_in_place(tmp, dst, path)
        return
    _fsync_folder(dst.parent)


def _publish_exclusive(tmp: Path, dst: Path, path) -> None:
    """Give ``tmp`` the name ``dst`` only if nothing has that name: a hard link fails
    if anything appeared there (another writer's file, a symbolic link)."""
    try:
        os.link(tmp, dst)
    except FileExistsError:
        raise _exists(path) from None
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        _claim_and_rename(tmp, dst, path)
    _fsync_folder(dst.parent)


def _claim_and_rename(tmp: Path, dst: Path, path) -> None:
    """Without hard links: claim the name with O_EXCL (as h5py's "w-" creates it), then
    rename over the empty file claimed. Exclusive as well; for a moment the
    destination is an empty file."""
    try:
        _create_new(dst)
    except FileExistsError:
        raise _exists(path) from None
    try:
        os.replace(tmp, dst)
    except OSError as exc:
        if exc.errno not in _RENAME_REFUSED:
            os.unlink(dst)
            raise
        _write_in_place(tmp, dst, path)  # the empty file is ours: fill it


def _write_in_place(tmp: Path, dst: Path, path) -> None:
    """Copy the finished file over ``dst``, keeping ``dst`` itself (its inode, owner,
    permissions, ACLs, links and mounts), as h5py writes a file. Not atomic: the room
    for the new contents is reserved first, so a full disk fails before the old
    contents are touched, but a crash during the copy leaves a damaged file."""
    size = tmp.stat().st_size
    try:
        fd = os.open(dst, os.O_WRONLY)
    except OSError as exc:
        raise type(exc)(exc.errno, f"{path}: cannot be replaced or written ({exc.strerror})") from None
    with open(fd, "wb") as out, open(tmp, "rb") as src:
        old_size = os.fstat(fd).st_size
        _reserve(fd, size, old_size, path)
        shutil.copyfileobj(src, out, 1 << 20)
        out.flush()
        os.ftruncate(fd, size)
        os.fsync(fd)


def _reserve(fd: int, size: int, old_size: int, path) -> None:
    """Allocate ``size`` bytes for ``fd`` before writing; on a full disk give the file
    its old size back and fail, the old contents untouched."""
    if size <= old_size or not hasattr(os, "posix_fallocate"):
        return
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL, errno.ENOSYS):
            return  # no preallocation here: the copy itself reports a full disk
        os.ftruncate(fd, old_size)
        raise type(exc)(exc.errno, f"{path}: no room to write the new file in place ({exc.strerror}); "
                                   "the old file is unchanged") from None


def _fsync(file: Path) -> None:
    fd = os.open(file, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_folder(folder: Path) -> None:
    """Put the new name on disk. A folder that cannot be opened or synced (no read
    permission, a filesystem without it) is left to the system: the file is published."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _name_destination(exc: BaseException, tmp: Path, path) -> None:
    """Messages that name the temporary file name the destination instead: that is
    the file the caller knows (and the cause's, which a wrapped error shows)."""
    def swap(value):
        return value.replace(str(tmp), str(path)) if isinstance(value, str) else value

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.args = tuple(swap(a) for a in exc.args)
        if isinstance(exc, OSError):
            # str() of an OSError is made from these, not from args
            for name in ("strerror", "filename", "filename2"):
                if isinstance(getattr(exc, name, None), str):
                    setattr(exc, name, swap(getattr(exc, name)))
            if exc.filename2 is not None and exc.filename2 == exc.filename:
                del exc.filename2  # "path -> path" says nothing (set to None, str() shows "-> None")
        exc = exc.__cause__


def _keep_metadata(tmp: Path, dst: Path) -> None:
    """Give the new file what the file it replaces has and h5py (which writes into that
    file) keeps: owner and group where permitted, permissions, extended attributes
    (POSIX ACLs are ones), in that order (a change of owner can clear mode bits; an ACL
    sets the group bits)."""
    old = os.stat(dst)
    _keep_owner(tmp, old)
    os.chmod(tmp, stat.S_IMODE(old.st_mode))
    _copy_xattrs(tmp, dst)


def _keep_owner(tmp: Path, old: os.stat_result) -> None:
    """The old owner and group where this process may set them (root may; others may
    change the group to one of their own)."""
    new = os.stat(tmp)
    for uid, gid in ((old.st_uid, old.st_gid), (-1, old.st_gid)):
        if (new.st_uid, new.st_gid) == (old.st_uid, old.st_gid):
            return
        try:
            os.chown(tmp, uid, gid)
            return
        except PermissionError:
            continue


def _copy_xattrs(tmp: Path, dst: Path) -> None:
    """The old file's extended attributes on the new one, and none it lacked (such as
    the ACL the folder's default gave the new file). Attributes the filesystem or the
    process may not set or remove are left as they are."""
    old = _xattrs(dst)
    if old is None:
        return
    for name in set(_xattrs(tmp) or {}) - set(old):
        _xattr_call(os.removexattr, tmp, name)
    for name, value in old.items():
        _xattr_call(os.setxattr, tmp, name, value)


def _xattrs(file: Path) -> Optional[dict]:
    """``{name: value}``, or None where the system or filesystem has none."""
    if not hasattr(os, "listxattr"):
        return None
    try:
        names = os.listxattr(file)
    except OSError as exc:
        if exc.errno in _XATTR_REFUSED:
            return None
        raise
    values = {}
    for name in names:
        try:
            values[name] = os.getxattr(file, name)
        except OSError as exc:
            if exc.errno not in _XATTR_REFUSED:
                raise
    return values


def _xattr_call(call, *args) -> None:
    try:
        call(*args)
    except OSError as exc:
        if exc.errno not in _XATTR_REFUSED:
            raise
