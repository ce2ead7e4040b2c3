"""HTTP protocol research workbench: a discrete-event simulator for HTTP/2 and HTTP/3 studies."""

__version__ = "0.1.0"
