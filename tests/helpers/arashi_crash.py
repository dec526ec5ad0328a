"""``python tests/helpers/arashi_crash.py before|after SERVE-ARGS...``: ``arashi serve`` that
stops dead in the middle of a delivery, for a test to kill it there. ``before``: the message's
rows are written but not committed; ``after``: committed, the 250 not yet sent. It prints the
moment on standard output and waits forever. ``holding`` (with ``--redis``): the cluster stage
has taken an accepted message from the stream and holds it, unstored and unacknowledged."""

from __future__ import annotations

import sys
import threading

from arashi import cli
from arashi.store import MailStore


def hold(say: str) -> None:
    print(say, flush=True)
    threading.Event().wait()


def main() -> int:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "holding":
        from arashi.cluster import Store

        Store.handle_event = lambda self, ev: hold("holding")
    elif mode == "before":
        insert = MailStore._insert

        def inserted(self, *a, **kw):
            insert(self, *a, **kw)
            hold("inside the transaction")
        MailStore._insert = inserted
    else:
        deliver = MailStore.deliver

        def delivered(self, *a, **kw):
            deliver(self, *a, **kw)
            hold("committed")
        MailStore.deliver = delivered
    return cli.main(["serve", *args])


if __name__ == "__main__":
    sys.exit(main())
