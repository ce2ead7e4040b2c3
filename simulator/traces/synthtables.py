"""The fixed tables the synthetic generator (``synth``) draws its header values and names from.

Chrome 120 on Windows as it sends requests: the user agent and client hints, ``accept``
and ``sec-fetch-dest`` per request destination (Fetch metadata), Chrome's own priority
labels and the RFC 9218 ``priority`` field it sends; what common servers answer with:
``content-type`` per resource kind, the ``server`` names and the CDN header each adds; the
stems of third-party host names and the words of paths.  Written by hand from what the
browser and those servers send (no list of theirs is copied): they are data, not drawn, so
they live apart from the generator's code in ``synth``, which imports every one of them.
"""

UA = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
SEC_CH_UA = '"Not_A Brand";v="8", "Chromium";v="120", "Google Chrome";v="120"'
ACCEPT = {  # what Chrome sends per request destination
    "document": "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
    "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
    "iframe": "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,"
    "image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
    "stylesheet": "text/css,*/*;q=0.1",
    "script": "*/*",
    "image": "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
    "font": "*/*",
    "fetch": "application/json, text/plain, */*",
    "ping": "*/*",
}
DEST = {
    "document": "document",
    "iframe": "iframe",
    "stylesheet": "style",
    "script": "script",
    "image": "image",
    "font": "font",
    "fetch": "empty",
    "ping": "empty",
}
CHROME_PRIORITY = {
    "document": "VeryHigh",
    "stylesheet": "VeryHigh",
    "font": "VeryHigh",
    "script": "High",
    "image": "Low",
    "iframe": "VeryHigh",
    "fetch": "High",
    "ping": "VeryLow",
}
RFC9218 = {
    "document": "u=0, i",
    "stylesheet": "u=0",
    "font": "u=0",
    "script": "u=1",
    "image": "u=4, i",
    "iframe": "u=0, i",
    "fetch": "u=1, i",
    "ping": "u=4, i",
}
CONTENT_TYPE = {
    "document": "text/html; charset=utf-8",
    "iframe": "text/html; charset=utf-8",
    "stylesheet": "text/css",
    "script": "application/javascript",
    "font": "font/woff2",
    "fetch": "application/json; charset=utf-8",
    "ping": "text/plain",
}
IMAGE_TYPES = (("image/webp", "webp"), ("image/jpeg", "jpg"), ("image/png", "png"), ("image/svg+xml", "svg"))
TEXT_TYPES = ("document", "iframe", "stylesheet", "script", "fetch")
THIRD_PARTY_STEMS = (
    "tagmanager",
    "analytics",
    "adnetwork",
    "fontcdn",
    "jscdn",
    "consent",
    "social",
    "videohost",
    "chatwidget",
    "adserver",
    "metrics",
    "imagecdn",
    "recaptcha",
    "abtest",
    "heatmap",
    "pixel",
)
SERVERS = (
    ("nginx", None),
    ("cloudflare", "cf-ray"),
    ("AmazonS3", "x-amz-cf-id"),
    ("ECS (nyb/1D2A)", None),
    ("Apache", None),
    ("gws", None),
    ("sffe", None),
    ("ESF", None),
)
WORDS = (
    "world",
    "economy",
    "markets",
    "climate",
    "science",
    "sport",
    "culture",
    "travel",
    "tech",
    "health",
    "politics",
    "europe",
    "asia",
    "energy",
    "music",
    "film",
    "books",
    "food",
    "cars",
    "space",
)
