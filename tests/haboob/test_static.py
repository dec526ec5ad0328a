"""Static-file rules: safe resolution under the root, validators, conditionals, ranges."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from haboob.static import (
    UNSATISFIABLE,
    Refused,
    RootDir,
    byte_range,
    content_type,
    etag,
    not_modified,
    open_cached,
    precondition_failed,
    resolve,
)
from seda.io import open_nowait


@pytest.fixture
def root(tmp_path):
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "index.html").write_text("home")
    (site / "docs" / "index.html").write_text("docs")
    (site / "a file.txt").write_text("spaces")
    (tmp_path / "secret").write_text("outside")
    os.symlink(tmp_path / "secret", site / "escape")
    os.symlink(site / "a file.txt", site / "inside-link")
    return str(site)


def test_files_directories_and_redirects(root):
    assert resolve(root, "/") == ("file", os.path.join(os.path.realpath(root), "index.html"))
    assert resolve(root, "/docs") == ("redirect", "/docs/")
    # never "//docs/": a browser would take that for a reference to host "docs"
    assert resolve(root, "//docs") == ("redirect", "/docs/")
    assert resolve(root, "///docs") == ("redirect", "/docs/")
    assert resolve(root, "/docs/")[1].endswith("docs/index.html")
    assert resolve(root, "/a%20file.txt")[1].endswith("a file.txt")
    assert resolve(root, "/inside-link")[1].endswith("a file.txt")
    assert resolve(root, "/./docs/./index.html")[1].endswith("docs/index.html")


@pytest.mark.parametrize("path", [
    "/../secret", "/docs/../../secret", "/%2e%2e/secret", "/%2E%2E%2Fsecret",
    "/docs/%2e%2e/%2e%2e/secret", "/..%2fsecret", "/..\\secret", "/%5c..%5csecret",
    "/index.html%00.txt", "/escape",
])
def test_nothing_leaves_the_root(root, path):
    with pytest.raises(Refused) as info:
        resolve(root, path)
    assert info.value.status == 403


@pytest.mark.parametrize("path", ["/a%20file.txt/", "/a%20file.txt/.", "/inside-link/"])
def test_a_file_named_as_a_directory_is_not_found(root, path):
    """As nginx answers: a trailing slash asks for a directory, and a file is none."""
    with pytest.raises(Refused) as info:
        resolve(root, path)
    assert info.value.status == 404


def test_symlinks_outside_only_when_allowed(root):
    assert resolve(root, "/escape", allow_outside=True)[1].endswith("secret")


@pytest.mark.skipif(open_nowait(__file__) is None,
                    reason="this kernel (or its sandbox) has no openat2 RESOLVE_CACHED")
def test_what_opens_without_waiting_for_the_disk_stays_under_the_root(root):
    """``open_cached`` has the kernel keep its lookup beneath the root's descriptor: what
    would leave the root does not open there (``resolve`` then refuses it)."""
    os.symlink("a file.txt", os.path.join(root, "near-link"))
    held = RootDir(root)
    try:
        def opened(path, **options):
            got = open_cached(root, path, root_fd=held.at(0.0), **options)
            if got is None:
                return None
            with os.fdopen(got[0], "rb") as f:
                return f.read()
        assert opened("/a%20file.txt") == b"spaces"
        # (a walk through a link may need more than the kernel's caches give without locks,
        # now and then: None, and resolve() takes it)
        assert opened("/near-link") in (b"spaces", None)
        for path in ("/escape", "/../secret", "/docs/%2e%2e/%2e%2e/secret", "/docs/", "/",
                     "/a%20file.txt/"):
            assert opened(path) is None, path
        assert opened("/a%20file.txt", allow_outside=True) == b"spaces"
        assert opened("/escape", allow_outside=True) in (b"outside", None)
        assert open_cached(root, "/a%20file.txt") is None     # no root to look beneath
    finally:
        held.close()


def test_the_root_held_open_is_the_one_its_path_names(tmp_path):
    """Renamed away with another directory put in its place, the root held open is let go
    for the new one, once looked at again; gone, it is let go for nothing."""
    (tmp_path / "www").mkdir()
    held = RootDir(str(tmp_path / "www"))
    try:
        first = held.at(1.0)
        assert first is not None and held.at(1.0) == first   # (once per batch)
        os.rename(tmp_path / "www", tmp_path / "private")
        (tmp_path / "www").mkdir()
        assert held.at(1.0) == first                  # not looked at again in the same batch
        fd = held.at(2.0)
        assert fd is not None and os.fstat(fd).st_ino == (tmp_path / "www").stat().st_ino
        os.rmdir(tmp_path / "www")
        assert held.at(3.0) is None
    finally:
        held.close()


@pytest.mark.parametrize("path, status", [("/missing", 404), ("/index.html/x", 404),
                                          ("/%ff", 404)])
def test_missing_things(root, path, status):
    with pytest.raises(Refused) as info:
        resolve(root, path)
    assert info.value.status == status


def test_a_directory_index_that_links_outside_is_refused_and_a_loop_is_missing(root, tmp_path):
    os.mkdir(os.path.join(root, "linked"))
    os.symlink(tmp_path / "secret", os.path.join(root, "linked", "index.html"))
    os.symlink("loop", os.path.join(root, "loop"))
    with pytest.raises(Refused) as info:
        resolve(root, "/linked/")
    assert info.value.status == 403
    assert resolve(root, "/linked/", allow_outside=True)[1].endswith("secret")
    with pytest.raises(Refused) as info:
        resolve(root, "/loop")
    assert info.value.status == 404


def test_content_types():
    assert content_type("a.html") == "text/html; charset=utf-8"
    assert content_type("a.png") == "image/png"
    assert content_type("a.unknownext") == "application/octet-stream"


# what browsers need, whatever the machine's /etc/mime.types says or lacks
WEB_TYPES = {"a.mjs": "text/javascript; charset=utf-8", "a.js": "text/javascript; charset=utf-8",
             "a.wasm": "application/wasm", "a.woff2": "font/woff2", "a.woff": "font/woff",
             "a.ttf": "font/ttf", "a.otf": "font/otf", "a.webp": "image/webp",
             "a.svg": "image/svg+xml", "a.webm": "video/webm", "a.ogv": "video/ogg",
             "a.ogg": "audio/ogg", "a.m4a": "audio/mp4", "a.flac": "audio/flac",
             "a.ts": "video/mp2t", "a.m3u8": "application/vnd.apple.mpegurl",
             "a.webmanifest": "application/manifest+json",
             "a.json": "application/json; charset=utf-8",
             "A.WOFF2": "font/woff2", "a.md": "text/markdown; charset=utf-8"}


def test_the_types_browsers_need():
    """An HLS segment (.ts) is video, not the Qt translation file Debian's table calls it."""
    assert {name: content_type(name) for name in WEB_TYPES} == WEB_TYPES


def test_the_types_browsers_need_do_not_depend_on_the_machine():
    """A slim container has no /etc/mime.types: Python's own table alone had fonts, WebP and
    Ogg as application/octet-stream."""
    code = ("import json, mimetypes, sys; mimetypes.knownfiles[:] = []; "
            "from haboob.static import content_type; "
            "print(json.dumps({n: content_type(n) for n in json.loads(sys.argv[1])}))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(list(WEB_TYPES))],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert json.loads(out) == WEB_TYPES


def test_a_compressed_file_is_of_its_compression_type():
    """data.json.gz was application/json (and page.html.gz text/html) with no Content-Encoding:
    a browser showed the gzip bytes as text, where nginx's octet-stream has them downloaded."""
    assert content_type("data.json.gz") == "application/gzip"
    assert content_type("page.html.gz") == "application/gzip"
    assert content_type("a.tar.gz") == content_type("a.tgz") == "application/gzip"
    assert content_type("logo.svgz") == "application/gzip"
    assert content_type("a.txt.bz2") == "application/x-bzip2"
    assert content_type("a.tar.xz") == "application/x-xz"
    assert content_type("a.gz") == "application/gzip"


def test_conditionals(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    st = os.stat(f)
    tag = etag(st)
    assert not_modified(tag, None, tag, st.st_mtime)
    assert not_modified(f'"other", W/{tag}', None, tag, st.st_mtime)
    assert not_modified("*", None, tag, st.st_mtime)
    assert not not_modified('"other"', "Sat, 01 Jan 2500 00:00:00 GMT", tag, st.st_mtime)
    assert not_modified(None, "Sat, 01 Jan 2500 00:00:00 GMT", tag, st.st_mtime)
    assert not not_modified(None, "Sat, 01 Jan 2000 00:00:00 GMT", tag, st.st_mtime)
    assert not not_modified(None, "not a date", tag, st.st_mtime)


def test_preconditions(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    st = os.stat(f)
    tag, old, future = etag(st), "Sat, 01 Jan 2000 00:00:00 GMT", "Sat, 01 Jan 2500 00:00:00 GMT"
    assert not precondition_failed(None, None, tag, st.st_mtime)
    assert not precondition_failed(f'"other", {tag}', None, tag, st.st_mtime)
    assert not precondition_failed("*", None, tag, st.st_mtime)
    assert precondition_failed('"other"', future, tag, st.st_mtime)    # If-Match wins
    assert precondition_failed(f"W/{tag}", None, tag, st.st_mtime)      # never a strong match
    assert precondition_failed(None, old, tag, st.st_mtime)             # changed since
    assert not precondition_failed(None, future, tag, st.st_mtime)
    assert not precondition_failed(None, "not a date", tag, st.st_mtime)


@pytest.mark.parametrize("header, expected", [
    (None, None), ("bytes=0-9", (0, 9)), ("bytes=90-", (90, 99)), ("bytes=-10", (90, 99)),
    ("bytes=95-200", (95, 99)), ("bytes=100-", UNSATISFIABLE), ("bytes=-0", UNSATISFIABLE),
    ("bytes=-500", (0, 99)), ("bytes=5-2", None), ("bytes=0-1,5-6", None), ("items=0-1", None),
    ("bytes=a-b", None), ("bytes=-", None),
    # Latin-1 superscripts pass str.isdigit but are no numbers: the header is ignored
    ("bytes=\xb2-5", None), ("bytes=-\xb9", None), ("bytes=0-\xb3", None),
    ("Bytes=0-9", (0, 9)), ("BYTES=-10", (90, 99)),       # the unit in any case
])
def test_byte_ranges(header, expected):
    assert byte_range(header, 100) == expected


@pytest.mark.parametrize("header", ["bytes=0-9", "bytes=0-", "bytes=-5", "bytes=-0"])
def test_a_range_of_an_empty_file_sends_it_whole(header):
    """No range of nothing is satisfiable; the whole of it is sent (200), as nginx does."""
    assert byte_range(header, 0) is None
