"""Link physics and loss models, on both implementations of a link (the Python reference
``link.Link`` and its C twin, ``make_link``'s choice when built)."""

import functools

import pytest

from simulator.engine import Simulator
from simulator.errors import InputError
from simulator.net import native
from simulator.net.link import Bernoulli, DropList, GilbertElliott, Jitter, Packet, Path, make_link, parse_loss


@pytest.fixture(params=native.IMPLEMENTATIONS)
def Link(request):
    """``Link(sim, name, ...)`` of one implementation."""
    return functools.partial(make_link, implementation=request.param)


def _send_many(link, n, size, gap_s=0.0):
    sim = link.sim
    arrivals = []
    for i in range(n):
        sim.call_at(i * gap_s, link.send, Packet(size, i), lambda p: arrivals.append((sim.now, p.payload)))
    sim.run()
    return arrivals


def test_serialization_and_propagation_delay(Link):
    sim = Simulator()
    link = Link(sim, "l", delay_s=0.05, bandwidth_bps=8e6)  # 1 byte per microsecond
    arrivals = _send_many(link, 3, 1000)
    # Back-to-back: each packet takes 1 ms on the wire, then 50 ms of propagation.
    assert [round(t, 9) for t, _ in arrivals] == [0.051, 0.052, 0.053]


def test_drop_tail_queue_limits_bytes_queued(Link):
    sim = Simulator()
    link = Link(sim, "l", delay_s=0.0, bandwidth_bps=1e6, queue_bytes=3000)
    arrivals = _send_many(link, 10, 1000)
    # One on the wire + three queued fit; the rest are dropped at the tail.
    assert len(arrivals) == 4
    assert link.stats.packets_dropped == 6
    assert link.stats.max_queue_bytes == 3000


def test_mtu_is_enforced(Link):
    sim = Simulator()
    link = Link(sim, "l", delay_s=0.0, mtu_bytes=1400)
    with pytest.raises(ValueError):
        link.send(Packet(1401), lambda p: None)


def test_bernoulli_loss_rate(Link):
    sim = Simulator(seed=3)
    link = Link(sim, "l", delay_s=0.01, loss=Bernoulli(0.05, sim.rng("loss")))
    arrivals = _send_many(link, 20000, 100)
    assert abs(1 - len(arrivals) / 20000 - 0.05) < 0.006


def test_gilbert_elliott_mean_burst_length_and_rate():
    """Bursty loss: with h=0, k=1 the mean loss run is 1/R and the rate P/(P+R)."""
    sim = Simulator(seed=5)
    model = GilbertElliott(0.01, 0.25, sim.rng("ge"))
    outcomes = [model.lost() for _ in range(200_000)]
    bursts, run = [], 0
    for lost in outcomes:
        if lost:
            run += 1
        elif run:
            bursts.append(run)
            run = 0
    mean_burst = sum(bursts) / len(bursts)
    assert mean_burst == pytest.approx(4.0, rel=0.08)
    assert sum(outcomes) / len(outcomes) == pytest.approx(0.01 / 0.26, rel=0.1)
    assert model.mean_burst_packets == 4.0


def test_jitter_reorders_packets(Link):
    sim = Simulator(seed=1)
    link = Link(sim, "l", delay_s=0.05, jitter=Jitter(prob=0.2, max_s=0.1))
    arrivals = _send_many(link, 200, 100, gap_s=0.001)
    order = [i for _, i in arrivals]
    assert order != sorted(order)
    assert sorted(order) == list(range(200))


def test_drop_list_drops_exactly_those_packets(Link):
    sim = Simulator()
    link = Link(sim, "l", delay_s=0.0, loss=DropList({1, 3}))
    arrivals = _send_many(link, 5, 10)
    assert [i for _, i in arrivals] == [0, 2, 4]


def test_parse_loss_specs():
    rng = Simulator().rng("x")
    assert parse_loss("0", rng).mean_loss_rate == 0
    assert parse_loss("0.02", rng).mean_loss_rate == 0.02
    assert parse_loss("2%", rng).mean_loss_rate == pytest.approx(0.02)
    ge = parse_loss("ge:0.01,0.5", rng)
    assert isinstance(ge, GilbertElliott) and ge.mean_burst_packets == 2.0
    for bad in ("lots", "ge:0.1", "1.5", "ge:0.1,0"):
        with pytest.raises(InputError):
            parse_loss(bad, rng)


@pytest.mark.parametrize("implementation", native.IMPLEMENTATIONS)
def test_path_losses_use_independent_streams_per_direction(implementation):
    sim = Simulator(seed=9)
    path = Path(sim, rtt_s=0.1, loss=0.5, implementation=implementation)
    fwd = [path.forward.loss.lost() for _ in range(50)]
    rev = [path.reverse.loss.lost() for _ in range(50)]
    assert fwd != rev
    assert path.forward.delay_s == 0.05


def test_jitter_must_be_a_probability_and_a_delay_not_below_zero():
    """A negative extra delay would schedule an arrival before its departure."""
    for prob, max_s in ((0.1, -0.01), (1.5, 0.1), (-0.1, 0.1)):
        with pytest.raises(InputError):
            Jitter(prob=prob, max_s=max_s)
