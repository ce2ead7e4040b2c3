"""Small HARs for the tests: a document and the images it names (``page_har``)."""

from __future__ import annotations


def page_har(document_url: str, image_urls: list[str], http_version: str) -> dict:
    """A HAR of a document at ``document_url`` naming ``image_urls`` (parser-found, 2,000-byte
    bodies, 100 ms connect and wait), every exchange over ``http_version`` ("http/1.1", "h2")."""

    def entry(u, mime, initiator):
        return {
            "pageref": "p",
            "startedDateTime": "2024-06-01T10:00:00+00:00",
            "_initiator": initiator,
            "request": {"method": "GET", "url": u, "httpVersion": http_version, "headers": [], "bodySize": 0},
            "response": {
                "status": 200,
                "httpVersion": http_version,
                "headers": [{"name": "content-type", "value": mime}],
                "content": {"size": 2000, "mimeType": mime},
                "bodySize": 2000,
            },
            "timings": {"blocked": 0, "dns": 0, "connect": 100, "send": 0, "wait": 100, "receive": 1},
        }

    entries = [entry(document_url, "text/html", {"type": "other"})]
    entries += [entry(u, "image/png", {"type": "parser", "url": document_url}) for u in image_urls]
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "t", "version": "1"},
            "pages": [{"id": "p", "startedDateTime": "2024-06-01T10:00:00+00:00", "title": document_url}],
            "entries": entries,
        }
    }
