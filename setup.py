"""Build of the optional C extensions ``simulator.frames._scanner`` (the frame scanner),
``simulator._engine`` (the engine's event queue and run loop), ``simulator.http._header_sizes``
(the HPACK block sizer's per-field loop), ``simulator.http._network`` (the page-load
network's per-chunk path), ``simulator.traces._harheaders`` (a HAR entry's
header objects read into fields), ``simulator.stacks._headers`` (the replay's header
clean-up loop), ``simulator.net._tcp``
(the TCP model's per-packet path: links and TCP endpoints), ``simulator.net._quic`` (the
QUIC model's per-packet path) and ``simulator.lab._relay``
(the lab's emulated link between two TUN devices; Linux only, and it has no Python twin:
without it the lab says so and stops).

All project metadata lives in pyproject.toml; this file only declares the extensions.
They are optional: if one cannot be compiled (no compiler, no Python headers) the install
still succeeds with a warning and the package uses its pure-Python twin.
Set ``WORKBENCH_REQUIRE_EXT=1`` to make a build failure fatal (``make asan`` does).

``simulator.net._tcp`` and ``simulator.net._quic`` must compute every float as their Python
twins do, so no compiler may fuse a multiply and an add into one rounding: they are built with ``-ffp-contract=off``
(and never with ``-ffast-math``); both include ``simulator/net/_cc.h``, ``_stride_tree.h``,
``_writer_turns.h`` and ``_fastattr.h`` (``_quic.c`` also ``_quic_streams.h``).
"""

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


REQUIRED = os.environ.get("WORKBENCH_REQUIRE_EXT", "") not in ("", "0")


class optional_build_ext(build_ext):
    def _required(self) -> bool:
        return REQUIRED

    def run(self):
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - any compiler/platform failure
            if self._required():
                raise
            self._warn(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            if self._required():
                raise
            # An earlier build's module (in the build folder, or beside the sources for an
            # editable install) would load in place of the twin this warning promises, and it
            # was built from other sources: remove it.
            here = os.path.dirname(os.path.abspath(__file__))
            for stale in (self.get_ext_fullpath(ext.name), os.path.join(here, self.get_ext_filename(ext.name))):
                if os.path.isfile(stale):
                    os.remove(stale)
            self._warn(exc)

    @staticmethod
    def _warn(exc):
        print(
            f"WARNING: the optional C extension could not be built ({exc}); the package will use its pure-Python twin.",
            file=sys.stderr,
        )


setup(
    ext_modules=[
        Extension(
            "simulator.frames._scanner",
            sources=["simulator/frames/_scanner.c"],
            depends=["simulator/frames/_huffman_table.h"],
            optional=not REQUIRED,
        ),
        Extension(
            "simulator._engine",
            sources=["simulator/_engine.c"],
            optional=not REQUIRED,
        ),
        Extension(
            "simulator.stacks._headers",
            sources=["simulator/stacks/_headers.c"],
            optional=not REQUIRED,
        ),
        Extension(
            "simulator.traces._harheaders",
            sources=["simulator/traces/_harheaders.c"],
            depends=["simulator/traces/_harentry.h"],
            optional=not REQUIRED,
        ),
        Extension(
            "simulator.http._network",
            sources=["simulator/http/_network.c"],
            optional=not REQUIRED,
        ),
        Extension(
            "simulator.http._header_sizes",
            sources=["simulator/http/_header_sizes.c"],
            optional=not REQUIRED,
        ),
        *(
            [
                Extension(
                    "simulator.lab._relay",
                    sources=["simulator/lab/_relay.c"],
                    extra_compile_args=["-O2"],
                    optional=not REQUIRED,
                )
            ]
            if sys.platform.startswith("linux")
            else []
        ),
        Extension(
            "simulator.net._tcp",
            sources=["simulator/net/_tcp.c"],
            depends=[
                "simulator/net/_cc.h",
                "simulator/net/_stride_tree.h",
                "simulator/net/_writer_turns.h",
                "simulator/net/_fastattr.h",
            ],
            extra_compile_args=[] if sys.platform == "win32" else ["-ffp-contract=off", "-fno-fast-math"],
            optional=not REQUIRED,
        ),
        Extension(
            "simulator.net._quic",
            sources=["simulator/net/_quic.c"],
            depends=[
                "simulator/net/_cc.h",
                "simulator/net/_stride_tree.h",
                "simulator/net/_writer_turns.h",
                "simulator/net/_fastattr.h",
                "simulator/net/_quic_streams.h",
            ],
            extra_compile_args=[] if sys.platform == "win32" else ["-ffp-contract=off", "-fno-fast-math"],
            optional=not REQUIRED,
        ),
    ],
    cmdclass={"build_ext": optional_build_ext},
)
