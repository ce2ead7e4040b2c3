"""Where a document's tags are (``traces.doctext.tag_share``), on a large page whose HAR keeps
its document's text: one search per family of spellings against every spelling searched on its
own (``mention_end_by_spelling``, the rule's definition), side by side in one run, same ends
required; and end to end, the fidelity study's inference (``infer_conditions``) of that page
with the text against without it (what the text costs a user).

The page is made here: a 2.3 MB document of 2,000 cross-origin images (URLs with ``&``, written
``&amp;``) and 1,000 same-origin ones written relative, and 2,000 URLs it does not mention
(``--quick``: an eighth of each).
Figures are CPU seconds, best of N, the candidates alternating; the ratios are
``by spelling / tag_share`` (above 1: faster) and ``with text / without`` (the text's cost).
"""

from __future__ import annotations


DOC = "https://www.site.example/dir/index.html"


def _page(n: int = 2000):
    cross = [f"https://cdn{i % 40}.example/assets/img/pic-{i}.png?v={i}&x=1" for i in range(n)]
    same = [f"https://www.site.example/dir/img/p{i}.png" for i in range(n // 2)]
    filler = "<p>" + "lorem ipsum dolor sit amet " * 40 + "</p>\n"
    parts = ["<!doctype html><html><head></head><body>\n"]
    for i, url in enumerate(cross):
        parts += [filler, f'<img src="{url.replace("&", "&amp;")}">\n']
        if i < len(same):
            parts.append(f'<img src="img/p{i}.png">\n')
    absent = [f"https://other.example/x{i}.js" for i in range(n)]
    return "".join(parts), {"cross-origin": cross, "relative": same, "absent": absent}


def _har(text: str, urls: list[str]) -> dict:
    """A Chrome-like HAR of the page: the document (with or without its text) and its images."""
    t = "2024-06-01T10:00:00.{:03d}Z"
    timings = {"blocked": 1, "dns": -1, "connect": -1, "ssl": -1, "send": 0, "wait": 30, "receive": 5}

    def entry(url, ms, mime, content):
        return {
            "pageref": "p",
            "startedDateTime": t.format(ms),
            "time": 36,
            "request": {"method": "GET", "url": url, "httpVersion": "h2", "headers": [], "bodySize": 0},
            "response": {
                "status": 200,
                "httpVersion": "h2",
                "headers": [{"name": "content-type", "value": mime}],
                "content": content,
                "bodySize": content["size"],
            },
            "timings": timings,
            "_initiator": {"type": "parser", "url": DOC},
        }

    doc_content = {"size": len(text), "mimeType": "text/html", **({"text": text} if text else {})}
    entries = [entry(DOC, 0, "text/html", doc_content)]
    image = {"size": 2000, "mimeType": "image/png"}
    entries += [entry(u, 40 + i % 900, "image/png", image) for i, u in enumerate(urls)]
    page = {"id": "p", "startedDateTime": t.format(0), "pageTimings": {"onLoad": 2000}}
    return {"log": {"version": "1.2", "creator": {"name": "bench"}, "pages": [page], "entries": entries}}


def run(quick: bool = False) -> dict:
    from simulator.bench import best_cpu_times_s
    from simulator.studies.fidelity.conditions import infer_conditions
    from simulator.traces.doctext import mention_end_by_spelling, tag_share
    from simulator.traces.har import parse_har
    from simulator.traces.pagegraph import page_graph

    repeats = 2 if quick else 5
    text, cases = _page(250 if quick else 2000)  # --quick: a page an eighth the size
    figures = {}
    print(f"tag_share on a {len(text) / 1e6:.1f} MB document (CPU s, best of {repeats}, alternating)")
    print(f"{'children':<26}{'by spelling s':>15}{'tag_share s':>13}{'by spelling / tag_share':>26}")
    for name, urls in cases.items():
        ends = [mention_end_by_spelling(text, u, DOC) for u in urls]
        shares = [tag_share(text, u, DOC) for u in urls]
        assert shares == [None if e is None else e / len(text) for e in ends], "tag_share moved a mention"
        best = best_cpu_times_s(
            {
                "by_spelling": lambda: [mention_end_by_spelling(text, u, DOC) for u in urls],
                "tag_share": lambda: [tag_share(text, u, DOC) for u in urls],
            },
            repeats,
        )
        ratio = best["by_spelling"] / best["tag_share"]
        figures[name] = {"children": len(urls), **best, "by_spelling_vs_tag_share": ratio}
        label = f"{name} ({len(urls)})"
        print(f"{label:<26}{best['by_spelling']:>15.3f}{best['tag_share']:>13.3f}{ratio:>25.1f}x")
    # End to end: the inference of the page's conditions, its HAR read, with the text and without.
    urls = cases["cross-origin"] + cases["relative"]
    graphs = {}
    for label, doc_text in (("with text", text), ("without", "")):
        trace = parse_har(_har(doc_text, urls), path="bench.har")
        graphs[label] = (page_graph(trace, "p"), trace.pages[0].start_s)
    best = best_cpu_times_s({label: (lambda g=g: infer_conditions(*g)) for label, g in graphs.items()}, repeats)
    ratio = best["with text"] / best["without"]
    figures["infer_conditions"] = {"resources": len(urls) + 1, **best, "with_text_vs_without": ratio}
    print(
        f"infer_conditions, {len(urls) + 1} resources (end to end for the inference): with text "
        f"{best['with text']:.3f} s, without {best['without']:.3f} s, with / without {ratio:.1f}x"
    )
    return {"cases": figures}
