# All set-up lives here: `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install system-deps demo test test-slow test-peer bench clean validate figures

install: $(STAMP)

# compileall: the package's bytecode, written once (an editable install writes none, and with
# PYTHONDONTWRITEBYTECODE set no run would: each `workbench` then compiles its modules, ~0.15 s).
$(STAMP): pyproject.toml $(wildcard setup.py) simulator/_engine.c simulator/http/_header_sizes.c simulator/http/_network.c simulator/traces/_harheaders.c simulator/traces/_harentry.h simulator/stacks/_headers.c simulator/net/_tcp.c simulator/net/_quic.c simulator/net/_cc.h simulator/net/_stride_tree.h simulator/net/_writer_turns.h simulator/net/_fastattr.h simulator/net/_quic_streams.h simulator/lab/_relay.c simulator/frames/_scanner.c simulator/frames/_huffman_table.h
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	$(PY) -m compileall -q simulator >/dev/null
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

# Debian packages the browser, capture and lab tests use (Chromium renders the slides and
# loads the lab's pages, tshark dissects simulated captures, iproute2 makes the lab's
# namespaces, procps's pgrep checks that nothing is left), installed when missing.  Without
# root they are skipped with a note, and the tests that need them skip.
SYSTEM_TOOLS := chromium:chromium tshark:tshark ip:iproute2 pgrep:procps
system-deps:
	@missing=""; for pair in $(SYSTEM_TOOLS); do cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	  else echo "note:$$missing not installed (needs root and apt-get); tests that need them will skip"; fi; \
	fi

demo: install
	$(VENV)/bin/workbench demo

# Lint first (`ruff check`, configured in pyproject.toml): a lint error fails the target.
test: install system-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q -n 2 --dist loadgroup

test-slow: install system-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q -n 2 --dist loadgroup -m slow

# h2's own test suite (downloaded from the registry into build/h2-suite) with the frame
# scanner's buffer on every connection, C and pure Python; also part of `make test`.
test-peer: install
	$(PY) -m pytest -q -n 2 tests/test_h2_suite.py

bench: install
	$(VENV)/bin/workbench bench all

# The README's figure, drawn from a run (deterministic).
figures: install
	$(PY) -m simulator.report.figures docs/figures

# The lab's validation (root): every page recorded at the reference condition and predicted at
# every point of docs/lab/grid*.toml, measured --runs times; the table and figure go to docs/lab/.
# Resumable: the loads are kept in build/lab-validation/.  More pages: make validate VALIDATE_TRACES='...'
VALIDATE_TRACES ?= traces/synthetic-page.har traces/captured-h2-page.har traces/har-real
VALIDATE_RUNS ?= 3
validate: install system-deps
	$(VENV)/bin/workbench lab validate $(VALIDATE_TRACES) --grid docs/lab/grid.toml --grid docs/lab/grid-loss.toml \
	  --reference rtt=20ms,bw=50mbit --reference-protocol h2 --runs $(VALIDATE_RUNS) \
	  --out build/lab-validation --report docs/lab

clean:
	rm -rf $(VENV) build *.egg-info simulator/*.so simulator/**/*.so

# AddressSanitizer builds of the C frame scanner (simulator/frames/_scanner.c), run over
# the fuzz corpus, of the engine's event queue (simulator/_engine.c), run under the
# engine's tests, of the HPACK block sizer's loop (simulator/http/_header_sizes.c), the HAR
# import's header loop and entry reader (simulator/traces/_harheaders.c, _harentry.h), the
# replay's header clean-up (simulator/stacks/_headers.c) and the network's per-chunk path (simulator/http/_network.c),
# run under their twin tests, and of the TCP and QUIC models' C twins (simulator/net/_tcp.c, _quic.c),
# run under the tests that hold them to the Python reference (for QUIC also its fuzzer,
# simulator.net.quic.fuzz: seeded loss patterns and ACK orders against the reference, and the
# schedulers on its writer, tests/test_priority_quic_native.py: _writer_turns.h's hooks and tree).
# Built into build/asan (the normal in-place extensions are untouched) and loaded through
# WORKBENCH_FRAMES_EXT / WORKBENCH_ENGINE_EXT / WORKBENCH_HEADERS_EXT / WORKBENCH_HAR_EXT /
# WORKBENCH_REPLAY_EXT / WORKBENCH_NETWORK_EXT / WORKBENCH_NET_EXT / WORKBENCH_QUIC_EXT;
# CPython itself is not instrumented, hence LD_PRELOAD of libasan and detect_leaks=0.
ASAN_SECONDS ?= 20
.PHONY: asan
asan: install
	rm -rf build/asan
	$(PY) -m pip install --quiet 'setuptools>=77'   # setup.py reads pyproject.toml's SPDX licence
	WORKBENCH_REQUIRE_EXT=1 CFLAGS="-fsanitize=address -fno-omit-frame-pointer -O1 -g" \
	  LDFLAGS="-fsanitize=address" $(PY) setup.py -q build_ext --force \
	  --build-lib build/asan --build-temp build/asan/tmp
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  WORKBENCH_FRAMES_EXT="$$(ls build/asan/simulator/frames/_scanner*.so)" \
	  $(PY) -m simulator.frames.fuzz --seconds $(ASAN_SECONDS) --corpus-size 600
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  WORKBENCH_ENGINE_EXT="$$(ls build/asan/simulator/_engine*.so)" \
	  $(PY) -m pytest -q -p no:xdist -p no:cacheprovider tests/test_engine.py
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  WORKBENCH_HEADERS_EXT="$$(ls build/asan/simulator/http/_header_sizes*.so)" \
	  $(PY) -m pytest -q -p no:xdist -p no:cacheprovider tests/test_header_sizes.py
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  WORKBENCH_HAR_EXT="$$(ls build/asan/simulator/traces/_harheaders*.so)" \
	  $(PY) -m pytest -q -p no:xdist -p no:cacheprovider tests/test_har_stream.py tests/test_har_entry.py
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  WORKBENCH_REPLAY_EXT="$$(ls build/asan/simulator/stacks/_headers*.so)" \
	  WORKBENCH_NETWORK_EXT="$$(ls build/asan/simulator/http/_network*.so)" \
	  $(PY) -m pytest -q -p no:xdist -p no:cacheprovider tests/test_page_size_cost.py -k "clean or chunk"
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  WORKBENCH_NET_EXT="$$(ls build/asan/simulator/net/_tcp*.so)" \
	  $(PY) -m pytest -q -p no:xdist -p no:cacheprovider tests/test_net_native.py tests/test_net_tcp.py tests/test_net_link.py
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  WORKBENCH_NET_EXT="$$(ls build/asan/simulator/net/_tcp*.so)" \
	  WORKBENCH_QUIC_EXT="$$(ls build/asan/simulator/net/_quic*.so)" \
	  $(PY) -m pytest -q -p no:xdist -p no:cacheprovider tests/test_net_quic_native.py tests/test_net_quic.py \
	  tests/test_priority_quic_native.py
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" \
	  WORKBENCH_NET_EXT="$$(ls build/asan/simulator/net/_tcp*.so)" \
	  WORKBENCH_QUIC_EXT="$$(ls build/asan/simulator/net/_quic*.so)" \
	  $(PY) -m simulator.net.quic.fuzz --seconds $(ASAN_SECONDS) --corpus-size 60
