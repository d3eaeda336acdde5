"""A replica's block-granular prefix cache: which KV blocks are kept, shared and evicted.

A cached block holds ``block_size`` tokens of one prefix and is named by an integer key built from
the prefix's owner (a shared prefix of the pool, or a session's history) and the block's index in
the prompt (:func:`block_key`). A block is *pinned* while running sequences use it (a reference count)
and *idle* otherwise; idle blocks stay cached, count against the KV capacity like any other block,
and are evicted least recently used when a sequence needs room. Only whole blocks are cached, and a
prompt's hits are its leading blocks found in the cache (a hit after a miss is no hit: the KV of a
block depends on every token before it).
"""

from __future__ import annotations

from collections import OrderedDict

#: Bits of a key that hold the block index (blocks per prompt < 2**32).
INDEX_BITS = 32


def block_key(owner: int, index: int) -> int:
    """Key of block ``index`` of prefix ``owner`` (owner = 2·pool id for a shared prefix, 2·session + 1)."""
    return (owner << INDEX_BITS) | index


class PrefixCache:
    """Cached KV blocks of one replica with reference counts and an LRU list of idle blocks.

    Attributes
    ----------
    ref : dict[int, int]
        Key -> sequences now using the block (0 = idle).
    idle : OrderedDict[int, None]
        Idle keys, least recently used first.
    evicted : int
        Blocks evicted so far.
    """

    __slots__ = ("ref", "idle", "evicted")

    def __init__(self) -> None:
        self.ref: dict[int, int] = {}
        self.idle: OrderedDict[int, None] = OrderedDict()
        self.evicted = 0

    @property
    def size(self) -> int:
        """Blocks held by the cache (pinned + idle)."""
        return len(self.ref)

    @property
    def pinned(self) -> int:
        """Blocks in use by running sequences."""
        return len(self.ref) - len(self.idle)

    def match(self, keys: list[int]) -> tuple[int, int]:
        """Leading ``keys`` found in the cache: (count, how many of them are idle)."""
        ref = self.ref
        n = idle = 0
        for k in keys:
            r = ref.get(k)
            if r is None:
                break
            n += 1
            idle += r == 0
        return n, idle

    def pin(self, keys: list[int]) -> None:
        """A sequence starts using these blocks (added if absent: it computed them)."""
        ref, idle = self.ref, self.idle
        for k in keys:
            r = ref.get(k, 0)
            if r == 0:
                idle.pop(k, None)
            ref[k] = r + 1

    def unpin(self, keys: list[int]) -> None:
        """A sequence stops using these blocks; unused ones become idle (most recently used, in the
        order given)."""
        ref, idle = self.ref, self.idle
        for k in keys:
            r = ref[k] - 1
            ref[k] = r
            if r == 0:
                idle[k] = None

    def keep(self, keys: list[int]) -> None:
        """Cache blocks a finished sequence leaves behind (idle); known ones are refreshed."""
        ref, idle = self.ref, self.idle
        for k in keys:
            r = ref.get(k)
            if r is None:
                ref[k] = 0
                idle[k] = None
            elif r == 0:
                idle.move_to_end(k)

    def evict(self, n: int) -> int:
        """Drop up to ``n`` least recently used idle blocks; returns how many were dropped."""
        idle, ref = self.idle, self.ref
        m = min(n, len(idle))
        for _ in range(m):
            k, _ = idle.popitem(last=False)
            del ref[k]
        self.evicted += m
        return m
