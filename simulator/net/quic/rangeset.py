"""Sorted disjoint byte ranges: what of a stream the peer has acknowledged.

Written by hand (aioquic's ``rangeset.RangeSet`` plays this part there).  A sender
records the acknowledged byte ranges of each of its streams (RFC 9000 section 13.3:
only what is still unacknowledged is sent again) and reports the acknowledged prefix.
The received *packet numbers* that ACK frames report (RFC 9000 section 19.3) are kept
inline by the receiver (``ack.AckGeneration``): one call fewer per packet.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

__all__ = ["RangeSet"]


class RangeSet:
    """Sorted disjoint half-open byte ranges [start, end)."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, lo: int, hi: int) -> None:
        """Add [lo, hi), merging with the ranges it touches."""
        if hi <= lo:
            return
        starts, ends = self.starts, self.ends
        if starts and starts[-1] <= lo <= ends[-1]:  # common case: extends the last range
            if hi > ends[-1]:
                ends[-1] = hi
            return
        i = bisect_left(ends, lo)  # first range that ends at or after lo
        j = bisect_right(starts, hi)  # ranges [i, j) touch [lo, hi)
        if i == j:
            starts.insert(i, lo)
            ends.insert(i, hi)
        else:
            starts[i:j] = [min(lo, starts[i])]
            ends[i:j] = [max(hi, ends[j - 1])]

    def prefix(self) -> int:
        """End of the range starting at 0 (0 if none)."""
        return self.ends[0] if self.starts and self.starts[0] == 0 else 0

    def missing(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Sub-ranges of [lo, hi) not in the set."""
        starts, ends = self.starts, self.ends
        out = []
        cur = lo
        i = bisect_right(ends, lo)
        while cur < hi and i < len(starts):
            s = starts[i]
            if s >= hi:
                break
            if s > cur:
                out.append((cur, s))
            if ends[i] > cur:
                cur = ends[i]
            i += 1
        if cur < hi:
            out.append((cur, hi))
        return out
