"""HTTP/2 receive-side demultiplexing: the four receivers side by side, measured here.

End to end for the receiver: a real h2 server (same process, same thread, its time
taken out) writes N responses into a real socket pair with the chosen interleaving; each
receiver reads it with the C frame scanner (and its pure-Python twin), hands the bytes
to the application (counting them) and returns the windows with WINDOW_UPDATEs.
Prints, per interleaving, each strategy's receive throughput (MB/s of this machine,
best of ``repeat`` runs interleaved) as a ratio to direct dispatch in the same run, its
peak payload buffered and its wakeups and dispatches per DATA frame.

Quick: 8 x 4 MiB, 1 MiB window.  Full: 16 x 16 MiB, 4 MiB window (the reference case,
50 x 100 MB with a 10 MB window, is ``workbench demux --full``).
"""

from __future__ import annotations


def run(quick: bool = False) -> dict:
    from simulator.frames import implementations
    from simulator.studies import demux

    MiB = 1024 * 1024
    size = (
        dict(streams=8, stream_bytes=4 * MiB, window_bytes=MiB)
        if quick
        else dict(streams=16, stream_bytes=16 * MiB, window_bytes=4 * MiB)
    )
    scanners = tuple(s for s in ("c", "python") if s in implementations())
    params = demux.DemuxParams(**size, part="real", repeat=3 if quick else 5, scanners=scanners)
    df = demux.run(None, params).real
    print(
        f"{params.streams} x {params.stream_bytes // MiB} MiB, window {params.window_bytes // MiB} MiB, "
        f"16 KiB frames, 64 KiB reads, eager reading, application counts bytes; best of {params.repeat}"
    )
    print(
        f"{'scanner':<8}{'interleaving':<13}{'strategy':<16}{'MB/s':>8}{'vs direct':>11}{'peak buffered':>15}"
        f"{'wakeups/frame':>15}{'dispatch/frame':>16}"
    )
    figures = {}
    for _, r in df.iterrows():
        print(
            f"{r['scanner']:<8}{r['interleaving']:<13}{r['strategy']:<16}{r['throughput_mb_s']:>8.0f}"
            f"{r['throughput_ratio_vs_direct']:>10.2f}x{r['peak_buffered_bytes']:>15,}"
            f"{r['wakeups_per_frame']:>15.3f}{r['dispatches_per_frame']:>16.3f}"
        )
        figures[f"{r['scanner']}/{r['interleaving']}/{r['strategy']}"] = {
            "throughput_mb_s": float(r["throughput_mb_s"]),
            "ratio_vs_direct": float(r["throughput_ratio_vs_direct"]),
            "peak_buffered_bytes": int(r["peak_buffered_bytes"]),
            "wakeups_per_frame": float(r["wakeups_per_frame"]),
            "dispatches_per_frame": float(r["dispatches_per_frame"]),
        }
    worst = df[df["scanner"] == scanners[0]].groupby("interleaving")["throughput_ratio_vs_direct"].min()
    for il, ratio in worst.items():
        print(f"{scanners[0]} {il}: direct vs the worst strategy x{1 / ratio:.1f}")
    return {"candidates": figures}
