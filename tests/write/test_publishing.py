"""How the writers publish a finished file (python/h5turbo/writing/atomic.py): exclusive
modes that stay exclusive, permissions, ACLs and extended attributes as h5py leaves
them, the in-place fallback where a rename is refused, short temporary names, fsync."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys

import h5py
import numpy as np
import pytest

import h5turbo
from h5turbo.writing import atomic

TEMP_NAME = re.compile(r"^\.h5turbo-[0-9a-f]{8}\.tmp$")


def _blocks(then=None, rows=4):
    """Two blocks of a (2 * rows, 3) int32 array; ``then()`` runs between them, while the
    temporary file is being written."""
    yield np.zeros((rows, 3), "i4")
    if then is not None:
        then()
    yield np.ones((rows, 3), "i4")


def _write_blocks(path, mode, then=None):
    h5turbo.write(path, "x", _blocks(then), shape=(8, 3), dtype="i4", mode=mode)


def _other_writer(path):
    def create():
        with h5py.File(path, "w-") as f:
            f["precious"] = np.arange(5)
    return create


# -- exclusive modes -------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["w-", "x"])
def test_exclusive_mode_refuses_a_file_created_during_the_write(tmp_path, mode):
    """The destination was checked once at the start and the file renamed over it at
    the end: a file another writer created meanwhile was silently replaced."""
    dst = tmp_path / "out.h5"
    with pytest.raises(FileExistsError, match=re.escape(str(dst))):
        _write_blocks(dst, mode, then=_other_writer(dst))
    with h5py.File(dst, "r") as f:
        assert list(f) == ["precious"]
    assert os.listdir(tmp_path) == ["out.h5"]  # no temporary file left


def test_exclusive_mode_refuses_a_dangling_symbolic_link(tmp_path):
    """h5py's "w-" refuses any name that exists, a link to nothing too; h5turbo wrote
    through it (creating its target)."""
    dst = tmp_path / "link.h5"
    os.symlink("nowhere.h5", dst)
    with pytest.raises(FileExistsError, match=re.escape(str(dst))):
        h5turbo.write(dst, "x", np.arange(3), mode="w-")
    assert sorted(os.listdir(tmp_path)) == ["link.h5"]


def test_exclusive_mode_without_hard_links_is_still_exclusive(tmp_path, monkeypatch):
    """Where the filesystem has no hard links, the name is claimed with O_EXCL."""
    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(atomic.os, "link", no_links)
    fresh = tmp_path / "fresh.h5"
    h5turbo.write(fresh, "x", np.arange(3), mode="x")
    with h5py.File(fresh, "r") as f:
        np.testing.assert_array_equal(f["x"][()], np.arange(3))
    dst = tmp_path / "out.h5"
    with pytest.raises(FileExistsError, match=re.escape(str(dst))):
        _write_blocks(dst, "w-", then=_other_writer(dst))
    with h5py.File(dst, "r") as f:
        assert list(f) == ["precious"]
    assert sorted(os.listdir(tmp_path)) == ["fresh.h5", "out.h5"]


# -- permissions, ACLs, extended attributes ------------------------------------------

def _acl(path) -> str:
    return subprocess.run(["getfacl", "-c", "-p", str(path)], check=True, capture_output=True, text=True).stdout


def _setfacl(*args):
    if shutil.which("setfacl") is None or shutil.which("getfacl") is None:
        pytest.skip("setfacl/getfacl are not installed")
    done = subprocess.run(["setfacl", *map(str, args)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"no POSIX ACLs here: {done.stderr.strip()}")


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_new_file_follows_the_folders_default_acl(tmp_path, umask_022):
    """A new file was made 0600 and chmod'ed to 0666 & ~umask: a folder's default ACL
    (group rw, others nothing) was ignored and everyone could read the file."""
    folder = tmp_path / "shared"
    folder.mkdir()
    _setfacl("-d", "-m", "u::rw,g::rw,o::-,u:nobody:rw", folder)
    with h5py.File(folder / "h5py.h5", "w") as f:
        f["x"] = 1
    for mode in ("w", "w-"):
        path = folder / f"h5turbo_{mode}.h5"
        h5turbo.write(path, "x", np.arange(3), mode=mode)
        assert os.stat(path).st_mode == os.stat(folder / "h5py.h5").st_mode
        assert _acl(path) == _acl(folder / "h5py.h5")


def test_replacing_keeps_the_files_acl_and_not_the_folders(tmp_path, umask_022):
    """Replacing a file dropped its ACL (and the group gained write through the old
    mask); a file without an ACL in a folder with a default one gained that one."""
    path = tmp_path / "acl.h5"
    h5turbo.write(path, "x", np.arange(3), mode="w")
    os.chmod(path, 0o644)
    _setfacl("-m", "u:nobody:rw", path)
    before = (_acl(path), os.stat(path).st_mode)
    h5turbo.write(path, "x", np.arange(5), mode="w")
    assert (_acl(path), os.stat(path).st_mode) == before

    folder = tmp_path / "default"
    folder.mkdir()
    plain = folder / "plain.h5"
    h5turbo.write(plain, "x", np.arange(3), mode="w")
    os.chmod(plain, 0o640)
    _setfacl("-d", "-m", "u::rw,g::rw,o::rw,u:nobody:rw", folder)
    before = (_acl(plain), os.stat(plain).st_mode)
    h5turbo.write(plain, "x", np.arange(5), mode="w")
    assert (_acl(plain), os.stat(plain).st_mode) == before


def _tagged_file(tmp_path):
    """A file written by h5turbo with the extended attribute user.project=alpha (the test
    skipped where the filesystem takes no user attributes)."""
    path = tmp_path / "tagged.h5"
    h5turbo.write(path, "x", np.arange(3), mode="w")
    try:
        os.setxattr(path, "user.project", b"alpha")
    except OSError as exc:
        pytest.skip(f"no user extended attributes here: {exc}")
    return path


def test_replacing_keeps_extended_attributes(tmp_path):
    """h5py's "w" writes into the file and keeps its extended attributes; the rename
    dropped them."""
    path = _tagged_file(tmp_path)
    h5turbo.write(path, "x", np.arange(5), mode="w")
    assert os.getxattr(path, "user.project") == b"alpha"


def test_extended_attributes_the_filesystem_refuses_are_left_out(tmp_path, monkeypatch):
    path = _tagged_file(tmp_path)

    def refuse(*args, **kwargs):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(atomic.os, "setxattr", refuse)
    h5turbo.write(path, "x", np.arange(5), mode="w")
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][()], np.arange(5))


# -- where the rename or the temporary file is refused ---------------------------------

def _refuse_rename(code):
    def refuse(src, dst, **kwargs):
        raise OSError(code, os.strerror(code), str(src), None, str(dst))  # 4th: winerror
    return refuse


@pytest.mark.parametrize("code", [errno.EPERM, errno.EBUSY, errno.EXDEV])
def test_refused_rename_writes_the_file_in_place(tmp_path, monkeypatch, code):
    """A sticky folder and another user's file (EPERM), a file bind-mounted on its own
    (EBUSY): h5py writes the file, h5turbo failed after all the work."""
    path = tmp_path / "shared.h5"
    h5turbo.write(path, "x", np.arange(3), mode="w")
    inode = os.stat(path).st_ino
    monkeypatch.setattr(atomic.os, "replace", _refuse_rename(code))
    h5turbo.write(path, "x", np.arange(5), mode="w")
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][()], np.arange(5))
    assert os.stat(path).st_ino == inode
    assert os.listdir(tmp_path) == ["shared.h5"]


def test_in_place_write_on_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch):
    """Room is reserved before the old contents are overwritten."""
    path = tmp_path / "shared.h5"
    path.write_bytes(b"old")
    monkeypatch.setattr(atomic.os, "replace", _refuse_rename(errno.EPERM))

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "posix_fallocate", full)
    with pytest.raises(OSError, match="unchanged") as info:
        h5turbo.write(path, "x", np.arange(5), mode="w")
    assert info.value.errno == errno.ENOSPC and str(path) in str(info.value)
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["shared.h5"]


def test_folder_that_takes_no_new_file_writes_a_writable_file_in_place(tmp_path, monkeypatch):
    """A read-only folder holding a file you may write: h5py's "w" writes it; the
    temporary file goes to the system's temp folder, then is copied over the file.
    A new file there, and the exclusive modes, still fail naming the file."""
    folder = tmp_path / "readonly"
    folder.mkdir()
    path = folder / "res.h5"
    h5turbo.write(path, "x", np.arange(3), mode="w")
    create = atomic._create_temporary

    def refuse_in(folder_refused):
        if folder_refused == folder:
            raise PermissionError(errno.EACCES, "Permission denied", str(folder_refused))
        return create(folder_refused)

    monkeypatch.setattr(atomic, "_create_temporary", refuse_in)
    h5turbo.write(path, "x", np.arange(5), mode="w")
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][()], np.arange(5))
    for target, mode in ((folder / "new.h5", "w"), (path, "w-")):
        with pytest.raises((PermissionError, FileExistsError), match=re.escape(str(target))):
            h5turbo.write(target, "x", np.arange(3), mode=mode)
    assert os.listdir(folder) == ["res.h5"]


_AS_ORDINARY_USER = """
import sys, numpy as np, h5py, h5turbo
for path in sys.argv[1:]:
    h5turbo.write(path, "x", np.arange(5), mode="w")
    with h5py.File(path, "r") as f:
        assert (f["x"][()] == np.arange(5)).all(), path
print("written")
"""


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to drop the capabilities that override permissions")
def test_sticky_and_read_only_folders_for_real(tmp_path):
    """Without root's override of permissions: a colleague's 0666 file in a sticky
    1777 folder (the rename fails with EPERM after all the work) and a writable file in
    a read-only folder (no temporary file beside it): h5py writes both, so h5turbo does."""
    sticky, readonly = tmp_path / "sticky", tmp_path / "readonly"
    for folder, name in ((sticky, "shared.h5"), (readonly, "res.h5")):
        folder.mkdir()
        (folder / name).write_bytes(b"old")
    os.chown(sticky / "shared.h5", 65534, 65534)
    os.chmod(sticky / "shared.h5", 0o666)
    for folder, mode in ((sticky, 0o1777), (readonly, 0o555)):
        os.chown(folder, 65534, 65534)
        os.chmod(folder, mode)
    drop = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner,-chown"]
    done = subprocess.run([*drop, sys.executable, "-c", _AS_ORDINARY_USER, str(sticky / "shared.h5"),
                           str(readonly / "res.h5")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "written" in done.stdout, done.stderr[-2000:]
    assert os.listdir(sticky) == ["shared.h5"] and os.listdir(readonly) == ["res.h5"]
    assert os.stat(sticky / "shared.h5").st_uid == 65534


def test_errors_name_the_destination_once(tmp_path):
    """A refused rename said "'/x/shared.h5' -> '/x/shared.h5'" once the temporary
    name was replaced by the destination's."""
    tmp, dst = tmp_path / ".h5turbo-0123abcd.tmp", tmp_path / "shared.h5"
    error = OSError(errno.EPERM, "Operation not permitted", str(tmp), None, str(dst))
    atomic._name_destination(error, tmp, dst)
    assert str(error).count(str(dst)) == 1 and str(tmp) not in str(error)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mounting needs root")
def test_a_file_bind_mounted_on_its_own_is_written(tmp_path):
    """docker -v host.h5:/data/data.h5: the rename is refused (EBUSY); the mounted file
    is written in place, so the host's file gets the new contents."""
    host, seen = tmp_path / "host.h5", tmp_path / "seen.h5"
    host.write_bytes(b"old")
    seen.write_bytes(b"")
    if subprocess.run(["mount", "--bind", str(host), str(seen)], capture_output=True).returncode != 0:
        pytest.skip("bind mounts are not allowed here")
    try:
        h5turbo.write(seen, "x", np.arange(5), mode="w")
    finally:
        subprocess.run(["umount", str(seen)], check=True)
    with h5py.File(host, "r") as f:
        np.testing.assert_array_equal(f["x"][()], np.arange(5))
    assert sorted(os.listdir(tmp_path)) == ["host.h5", "seen.h5"]


# -- temporary names, fsync ----------------------------------------------------------

def test_long_names_and_the_temporary_name(tmp_path):
    """The temporary name added 22 bytes to the destination's: names of 234-255 bytes
    failed with ENAMETOOLONG. It is now short, hidden, of a fixed form."""
    seen = []
    path = tmp_path / ("a" * 252 + ".h5")  # 255 bytes, the usual limit
    _write_blocks(path, "w", then=lambda: seen.extend(os.listdir(tmp_path)))
    with h5py.File(path, "r") as f:
        assert f["x"].shape == (8, 3)
    assert len(seen) == 1 and TEMP_NAME.match(seen[0]), seen
    assert os.listdir(tmp_path) == [path.name]


def test_file_and_folder_are_synced_before_and_after_the_rename(tmp_path, monkeypatch):
    """Without fsync a rename can reach the disk before the data: after a power loss
    the destination is an empty file."""
    synced, fsync, replace = [], os.fsync, os.replace

    def record_fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        fsync(fd)

    def record_replace(src, dst):
        synced.append("rename")
        replace(src, dst)

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("needs /proc")
    monkeypatch.setattr(atomic.os, "fsync", record_fsync)
    monkeypatch.setattr(atomic.os, "replace", record_replace)
    path = tmp_path / "out.h5"
    h5turbo.write(path, "x", np.arange(3), mode="w")
    assert len(synced) == 3 and TEMP_NAME.match(os.path.basename(synced[0])), synced
    assert synced[1:] == ["rename", os.path.realpath(tmp_path)]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mounting needs root")
def test_a_full_disk_leaves_the_old_file_and_names_file_and_dataset(tmp_path):
    """A real ENOSPC on a 1 MiB tmpfs: libhdf5's message named the temporary file (or
    nothing); now the error names the destination and the dataset, the old file is
    kept and no temporary file is left."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("tmpfs mounts are not allowed here")
    try:
        path = disk / "out.h5"
        path.write_bytes(b"old")
        noise = np.random.default_rng(0).random((400, 400))  # 1.3 MB, incompressible
        with pytest.raises(OSError) as info:
            h5turbo.write(path, "d", noise, mode="w")
        assert info.value.errno == errno.ENOSPC
        assert f"{path}:d" in str(info.value) and ".h5turbo-" not in str(info.value)
        assert path.read_bytes() == b"old" and os.listdir(disk) == ["out.h5"]
    finally:
        subprocess.run(["umount", str(disk)], check=True)
