"""How values are written: the same parser reads the command line's text and a TOML value."""

from __future__ import annotations

import pytest

from haboob.values import (
    address,
    megabytes,
    milliseconds,
    mount,
    seconds,
    seconds_or_off,
    size,
    whole,
)


@pytest.mark.parametrize("parse, written, value", [
    (size, "64K", 65536), (size, "10m", 10 * 2**20), (size, "1G", 2**30), (size, 4096, 4096),
    (size, "1.5K", 1536), (whole, "4", 4), (whole, 4, 4), (whole, "-1", -1),
    (seconds, "2.5", 2.5), (seconds, 15, 15.0), (milliseconds, 100, 0.1),
    (seconds_or_off, "0", 0.0), (seconds_or_off, 0.5, 0.5),
    (megabytes, "0", 0), (megabytes, 1.5, 3 * 2**19),
    (address, "0.0.0.0:80", ("0.0.0.0", 80)), (address, "[::1]:8000", ("::1", 8000)),
    (address, ":8000", ("127.0.0.1", 8000)),
    (mount, "/api=pkg.mod:app", ("/api", "pkg.mod:app")),
])
def test_text_and_toml_values_mean_the_same(parse, written, value):
    assert parse(written) == value


@pytest.mark.parametrize("parse, written, message", [
    (size, "lots", "'lots' is not a size"), (size, 0, "0: a size must be > 0"),
    (size, True, "True is not a size"), (whole, 2.5, "2.5 is not a whole number"),
    (whole, False, "False is not a whole number"), (seconds, "-1", "seconds must be > 0"),
    (seconds_or_off, "-1", r"seconds must be >= 0 \(0: off\)"),
    (seconds_or_off, "soon", "is not a number of seconds"),
    (megabytes, -1, "megabytes must be >= 0"), (address, "host:99999", "expected HOST:PORT"),
    (address, 8000, "expected text"), (mount, "api=x:y", "expected /PREFIX=module:attribute"),
])
def test_a_value_that_does_not_parse_says_what_was_expected(parse, written, message):
    with pytest.raises(ValueError, match=message):
        parse(written)
