"""The cyclic garbage collector waits while the bridge loads (a start-up mechanism, issue 26).

Loading the bridge creates some 86,000 objects that live as long as the process: modules, classes, pydantic's
schemas and validators. While they are created, the collector runs again and again and walks them all: one full
collection in the middle of `run`'s load took 9 ms, and the collections over 0.5 ms added up to about 20 ms, most
of them between the first request and the first tool call. `scripts/bench_startup.py --mechanisms` (5 runs each):
start -> the first tool's result 374 ms with the pause against 459 ms without for `run`, 539 against 621 for `acp`,
622 against 647 for `serve`.

`pause()` turns the collector off at the start. `resume()` turns it on once the bridge is loaded. It first moves
every object then alive into the permanent generation (`gc.freeze`), so later full collections, in a long
`serve` too, no longer walk what loading made. The cost: the cyclic garbage the load itself left is frozen with it
and never freed: 662 objects, after importing all of `run`.

`AGENT_BRIDGE_GC_PAUSE=0` turns the mechanism off (`scripts/bench_startup.py --mechanisms` shows what it buys).
"""

from __future__ import annotations

import gc
import logging
import os

log = logging.getLogger(__name__)

_paused = False


def pause() -> None:
    """The collector off until `resume()`, unless the environment says not to or it is off already."""
    global _paused
    if os.environ.get("AGENT_BRIDGE_GC_PAUSE", "1") == "0" or not gc.isenabled():
        return
    gc.disable()
    _paused = True


def resume() -> None:
    """The bridge is loaded: what it made is kept out of every later collection, and the collector runs again."""
    global _paused
    if not _paused:
        return
    _paused = False
    gc.freeze()
    gc.enable()
    if log.isEnabledFor(logging.DEBUG):  # the count walks every frozen object: ~5 ms on `run`'s way to its first tool
        log.debug("the collector runs again; %d objects of the load are kept out of it", gc.get_freeze_count())
