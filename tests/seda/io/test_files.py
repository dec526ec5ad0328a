"""The file stage and the page-cache fast path."""

from __future__ import annotations

import errno
import os

import pytest

from seda.io import FileDone, FileLayer, open_nowait, read_nowait

from tests.helpers.recorder import Recorder


def test_open_write_read_stat_close_complete_as_events(rt, tmp_path):
    done = Recorder()
    rt.add_stage("done", done)
    files = FileLayer.of(rt)
    rt.start()
    path = tmp_path / "f"
    files.open(path, rt.sink("done"), "open", flags=os.O_RDWR | os.O_CREAT)
    fd = done.wait(1)[0].result
    files.write(fd, b"hello world", 0, rt.sink("done"), "write")
    files.stat(path, rt.sink("done"), "stat")
    files.read(fd, 5, 6, rt.sink("done"), "read")
    files.close(fd, rt.sink("done"), "close")
    events = {e.tag: e for e in done.wait(5)}
    assert events["write"].result == 11
    assert events["read"].result == b"world"
    assert events["stat"].error is None and events["close"].error is None
    assert all(isinstance(e, FileDone) for e in events.values())


def test_errors_arrive_as_events(rt, tmp_path):
    done = Recorder()
    rt.add_stage("done", done)
    FileLayer.of(rt).open(tmp_path / "missing", rt.sink("done"), "x")
    rt.start()
    event = done.wait(1)[0]
    assert isinstance(event.error, FileNotFoundError) and event.result is None


def test_a_cached_read_does_not_cross_to_the_file_stage(rt, tmp_path):
    path = tmp_path / "cached"
    path.write_bytes(b"in the page cache")     # just written: the pages are cached
    done = Recorder()
    rt.add_stage("done", done)
    files = FileLayer.of(rt)
    rt.start()
    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_nowait(fd, 6, 3) in (b"the pa", None)  # None where the kernel cannot tell
        files.read(fd, 100, 0, rt.sink("done"), "r")
        assert done.wait(1)[0].result == b"in the page cache"
        if read_nowait(fd, 1, 0) is not None:
            assert files.fast_reads == 1 and rt.stats()[FileLayer.STAGE]["processed"] == 0
    finally:
        os.close(fd)


def test_a_read_that_would_block_goes_to_the_stage(rt, tmp_path, monkeypatch):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)
    done = Recorder()
    rt.add_stage("done", done)
    files = FileLayer.of(rt)
    rt.start()
    monkeypatch.setattr("seda.io.files.read_nowait", lambda fd, size, offset: None)
    fd = os.open(path, os.O_RDONLY)
    try:
        files.read(fd, 10, 990, rt.sink("done"), "r")
        assert done.wait(1)[0].result == b"x" * 10
        assert rt.stats()[FileLayer.STAGE]["processed"] == 1
    finally:
        os.close(fd)


def test_operations_on_one_file_stay_in_order_while_files_run_in_parallel(rt, tmp_path):
    done = Recorder()
    rt.add_stage("done", done)
    files = FileLayer.of(rt)
    rt.start()
    fds = [os.open(tmp_path / f"f{i}", os.O_RDWR | os.O_CREAT) for i in range(4)]
    try:
        for k in range(50):                      # append-style writes, interleaved across files
            for i, fd in enumerate(fds):
                files.write(fd, b"%03d," % k, 4 * k, rt.sink("done"), (i, k))
        done.wait(200)
        per_file = {}
        for e in done.events:
            per_file.setdefault(e.tag[0], []).append(e.tag[1])
        assert all(order == list(range(50)) for order in per_file.values())
        for fd in fds:
            assert os.pread(fd, 200, 0) == b"".join(b"%03d," % k for k in range(50))
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.skipif(open_nowait(__file__) is None,
                    reason="this kernel (or its sandbox) has no openat2 RESOLVE_CACHED")
def test_a_path_in_the_kernels_caches_opens_at_once(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"cached")                 # just written: its path and pages are cached
    fd = open_nowait(str(f))
    assert fd is not None
    try:
        assert os.read(fd, 100) == b"cached"
        assert os.get_inheritable(fd) is False      # O_CLOEXEC, as os.open gives
    finally:
        os.close(fd)
    with pytest.raises(IsADirectoryError):
        open_nowait(str(tmp_path), os.O_WRONLY)


@pytest.mark.skipif(open_nowait(__file__) is None,
                    reason="this kernel (or its sandbox) has no openat2 RESOLVE_CACHED")
def test_beneath_a_directory_the_kernel_keeps_the_lookup_inside_it(tmp_path):
    inside = tmp_path / "root"
    (inside / "sub").mkdir(parents=True)
    (inside / "sub" / "f").write_bytes(b"inside")
    (tmp_path / "secret").write_bytes(b"outside")
    (inside / "sub" / "near").symlink_to("f")                 # a link that stays inside
    (inside / "out").symlink_to("../secret")                  # links that leave
    (inside / "absolute").symlink_to(inside / "sub" / "f")    # (absolute: not even so)
    root = os.open(inside, os.O_PATH | os.O_DIRECTORY)
    try:
        for path in ("sub/f", "sub/near", "sub/../sub/f"):
            fd = open_nowait(path, beneath=root)
            # (a link or a '..' may need more than the kernel's caches give without locks,
            # now and then: None, as for a lookup that would read the disk)
            assert fd is not None or path != "sub/f", path
            if fd is not None:
                with os.fdopen(fd, "rb") as f:
                    assert f.read() == b"inside"
        for path in ("../secret", "out", "absolute", str(tmp_path / "secret")):
            try:                               # refused (EXDEV), or left to the slow way
                assert open_nowait(path, beneath=root) is None, path
            except OSError as exc:
                assert exc.errno == errno.EXDEV, path
    finally:
        os.close(root)
