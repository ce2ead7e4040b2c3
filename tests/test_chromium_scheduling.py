"""Chromium's two request schedulers (``browser.scheduling``), sans-I/O: Blink's
ResourceLoadScheduler (tight until the <body>) and the network service's ResourceScheduler
(delayable requests held only to servers not known to multiplex)."""

from simulator.browser.scheduling import (
    BOOSTED_IMAGES,
    MAX_DELAYABLE_IN_FLIGHT,
    MAX_PER_HOST,
    PRIORITY_RANK,
    ChromiumScheduler,
)

LOW, MEDIUM, HIGH, VERY_HIGH = (PRIORITY_RANK[n] for n in ("Low", "Medium", "High", "VeryHigh"))


def _scheduler(hosts: dict[int, str]):
    sent: list[int] = []
    return ChromiumScheduler(sent.append, hosts.__getitem__), sent


def test_tight_mode_holds_low_priority_requests_to_two_in_flight_until_the_body():
    """Blink: before the <body>, a request below High starts only while fewer than two are in
    flight; High and above start at once; after the <body> the rest start."""
    hosts = {i: "https://a.example" for i in range(10)}
    s, sent = _scheduler(hosts)
    s.connected("https://a.example")
    s.ask(0, HIGH)  # a parser-blocking script
    s.ask(1, LOW)
    s.ask(2, LOW)
    s.ask(3, LOW)
    assert sent == [0, 1]
    s.ask(4, VERY_HIGH)  # a stylesheet: not held
    assert sent == [0, 1, 4]
    s.finished(1)
    assert sent == [0, 1, 4]  # still two (0 and 4) in flight
    s.finished(0)
    assert sent == [0, 1, 4, 2]  # 4 and 2 in flight
    s.ask(5, LOW)
    s.finished(4)
    assert sent == [0, 1, 4, 2, 3]  # in the order asked
    s.body_reached()
    assert sent == [0, 1, 4, 2, 3, 5]


def test_tight_mode_lets_two_medium_requests_through_whatever_is_in_flight():
    """Blink's image boost: the first images are Medium, and up to two Medium requests start
    in tight mode even when two or more requests are in flight."""
    hosts = {i: "https://a.example" for i in range(6)}
    s, sent = _scheduler(hosts)
    s.connected("https://a.example")
    s.ask(0, HIGH)
    s.ask(1, HIGH)
    s.ask(2, MEDIUM)
    s.ask(3, MEDIUM)
    s.ask(4, MEDIUM)
    assert sent == [0, 1, 2, 3]


def test_the_first_images_are_medium_and_a_captured_boost_is_ignored():
    """Chromium starts images at Low, the first five at Medium; a capture's last priority
    (High: raised once in the viewport) does not raise the initial one, a lower one lowers it."""
    s, _ = _scheduler({})
    ranks = [s.initial_priority("image", False, "High") for _ in range(BOOSTED_IMAGES + 2)]
    assert ranks == [MEDIUM] * BOOSTED_IMAGES + [LOW, LOW]
    assert s.initial_priority("stylesheet", True, None) == VERY_HIGH
    assert s.initial_priority("stylesheet", False, "Medium") == MEDIUM
    assert s.initial_priority("script", True, None) == HIGH
    assert s.initial_priority("script", False, None) == LOW


def test_waiting_requests_start_highest_priority_first():
    """Blink releases the highest priority first, in the order asked within a priority."""
    hosts = {i: "https://a.example" for i in range(6)}
    s, sent = _scheduler(hosts)
    s.connected("https://a.example")
    s.ask(0, HIGH)
    s.ask(1, HIGH)
    s.ask(2, LOW)
    s.ask(3, LOW)
    s.ask(4, MEDIUM)  # Medium goes through on its own allowance
    s.ask(5, LOW)
    assert sent == [0, 1, 4]
    s.finished(0)
    s.finished(1)
    s.finished(4)
    assert sent[3:] == [2, 3]  # Low in the order asked, two at a time


def test_network_service_holds_delayable_requests_only_to_hosts_not_known_to_multiplex():
    """The network service: once the body is reached, a host known to speak HTTP/2 or HTTP/3
    takes every request at once; another takes at most six in flight, and at most ten
    delayable requests are in flight in all."""
    n = 30
    hosts = {i: ("https://h2.example" if i < n else f"https://h1-{i % 3}.example") for i in range(2 * n)}
    s, sent = _scheduler(hosts)
    s.body_reached()
    s.connected("https://h2.example")
    for i in range(n):
        s.ask(i, LOW)
    assert sent == list(range(n))
    for i in range(n, 2 * n):
        s.ask(i, LOW)
    h1 = [i for i in sent if i >= n]
    assert len(h1) == MAX_DELAYABLE_IN_FLIGHT
    per_host = {h: sum(hosts[i] == h for i in h1) for h in {hosts[i] for i in h1}}
    assert max(per_host.values()) <= MAX_PER_HOST
    s.finished(h1[0])
    assert len([i for i in sent if i >= n]) == MAX_DELAYABLE_IN_FLIGHT + 1
