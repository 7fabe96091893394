# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""What the ranks of the Python tests print for the shell test to read:
tab-separated `phase` lines (name, seconds since import) and `check` lines
(name, 1 or 0, detail), one per line, flushed at once."""
import time

T0 = time.time()


def phase(name):
    print("phase\t%s\t%.2f s" % (name, time.time() - T0), flush=True)


def check(name, ok, detail=""):
    detail = str(detail).replace("\t", " ").replace("\n", " ")[:400]
    print("check\t%s\t%d\t%s" % (name, 1 if ok else 0, detail), flush=True)
    return ok


def raises(name, exc_types, fn, *words):
    """Checks that fn() raises one of exc_types with all words in the
    message; returns the exception."""
    try:
        fn()
    except Exception as e:
        msg = str(e)
        ok = isinstance(e, exc_types) and all(w in msg for w in words)
        check(name, ok, "%s: %s" % (type(e).__name__, msg))
        return e
    check(name, False, "no exception")
    return None
