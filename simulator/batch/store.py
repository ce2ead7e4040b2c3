"""The results folder of a batch: a Parquet dataset per table, one file per job.

Layout of ``RESULTS_DIR``::

    manifest.json          every job ever asked for here (study, trace, parameters, seed)
    summary/<job>.parquet  the job's summary rows (HOL: one per scheme); marks the job done
    blocks/<job>.parquet   optional per-block rows (``--tables summary,blocks``)
    failed/<job>.json      a job that raised: its error and traceback
    .lock                  held (flock) while a batch writes here

Every file is written atomically: a hidden temporary file in the same folder, flushed and
fsync'ed, then ``os.replace``'d onto its final name and the folder fsync'ed.  A process
killed at any moment leaves either the complete file or none (plus, at worst, a hidden
``.*.tmp`` file that ``load`` never reads and the next batch removes).  A job's optional
tables are written before its summary file, so "summary exists" means the job is complete.

The job id is a hash of (study, trace content hash, resolved parameters, seed): a rerun
with the same command finds the files of the jobs already done and runs only the rest.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import json
import os
from pathlib import Path

import pandas as pd

from ..errors import InputError
from ..outfiles import write_output

__all__ = ["job_id", "atomic_write", "ResultsDir", "load", "failures", "status", "MANIFEST"]

MANIFEST = "manifest.json"
SUMMARY = "summary"
FAILED = "failed"
TMP_SUFFIX = ".tmp"


def job_id(study: str, trace_hash: str, params: dict, seed: int) -> str:
    """The job's id: 24 hex digits of the SHA-256 of its study, trace hash, parameters and seed."""
    key = json.dumps(
        {"study": study, "trace": trace_hash, "params": params, "seed": int(seed)},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old state or the whole new file
    (flushed to disk, the folder too); a device, FIFO or symlink planted in the results
    folder is written through, never replaced (``simulator.outfiles``)."""
    write_output(path, data, fsync=True)


def table_bytes(df: pd.DataFrame) -> bytes:
    """A DataFrame as Parquet bytes (no index)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


class ResultsDir:
    """One results folder: paths, the manifest, the writer's lock."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._lock_fd: int | None = None

    # paths ---------------------------------------------------------------------
    def table_dir(self, table: str) -> Path:
        """The folder holding one Parquet file per finished job for ``table``."""
        return self.root / table

    def table_path(self, table: str, job: str) -> Path:
        """The Parquet file of ``table`` for job ``job``."""
        return self.root / table / f"{job}.parquet"

    def failed_path(self, job: str) -> Path:
        """The JSON record of job ``job``'s failure."""
        return self.root / FAILED / f"{job}.json"

    def is_done(self, job: str, tables) -> bool:
        """True when job ``job`` has a Parquet file for every one of ``tables``."""
        return all(self.table_path(t, job).exists() for t in tables)

    # writer side ---------------------------------------------------------------
    def open_for_writing(self, tables) -> None:
        """Create the folders, take the lock, remove temporary files a killed run left."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the results folder ({exc.strerror}).", path=str(self.root)) from None
        if not self.root.is_dir():
            raise InputError("is not a folder.", path=str(self.root))
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise InputError("another batch is writing to this results folder.", path=str(self.root)) from None
            raise
        self._lock_fd = fd
        for sub in (*tables, FAILED):
            d = self.table_dir(sub)
            d.mkdir(exist_ok=True)
            for stale in d.glob(f".*{TMP_SUFFIX}"):
                try:
                    stale.unlink()
                except OSError:
                    pass
        for stale in self.root.glob(f".*{TMP_SUFFIX}"):
            try:
                stale.unlink()
            except OSError:
                pass

    def close(self) -> None:
        """Release the writer's lock on the folder (a no-op when it is not held)."""
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def read_manifest(self) -> dict | None:
        """The folder's manifest, or None when there is none yet; InputError when it is not valid JSON."""
        path = self.root / MANIFEST
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"the manifest is not valid JSON ({exc}).", path=str(path)) from None

    def merge_manifest(self, study: str, jobs: list[dict], tables) -> dict:
        """Add ``jobs`` to the folder's manifest (written atomically) and return it."""
        old = self.read_manifest()
        if old is not None and old.get("study") != study:
            raise InputError(
                f"holds results of study {old.get('study')!r}, not {study!r}: use another results folder.",
                path=str(self.root),
            )
        merged = list(old["jobs"]) if old else []
        known = {j["job_id"]: j for j in merged}
        for j in jobs:
            if j["job_id"] in known:  # asked again, maybe for more tables
                prev = known[j["job_id"]]
                prev["tables"] = sorted(set(prev.get("tables", [SUMMARY])) | set(j.get("tables", [SUMMARY])))
            else:
                merged.append(j)
                known[j["job_id"]] = j
        all_tables = sorted(set(old.get("tables", [])) | set(tables)) if old else sorted(tables)
        manifest = {"format": 1, "study": study, "tables": all_tables, "jobs": merged}
        atomic_write(self.root / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
        return manifest

    def write_tables(self, job: str, payload: dict[str, bytes]) -> None:
        """The job's tables, summary last (its file is the job's "done" mark)."""
        for name in sorted(payload, key=lambda n: n == SUMMARY):
            atomic_write(self.table_path(name, job), payload[name])
        try:
            self.failed_path(job).unlink()
        except FileNotFoundError:
            pass

    def write_failure(self, job: dict, error: str, tb: str) -> None:
        """Record job ``job``'s error and traceback atomically as ``failed/<job_id>.json``."""
        record = {
            "job_id": job["job_id"],
            "study": job["study"],
            "trace": job["trace"],
            "trace_hash": job["trace_hash"],
            "flags": job["flags"],
            "seed": job["seed"],
            "error": error,
            "traceback": tb,
        }
        atomic_write(self.failed_path(job["job_id"]), json.dumps(record, indent=1).encode())


# ---------------------------------------------------------------------------------------
# Reading


def _existing(results_dir) -> ResultsDir:
    rd = ResultsDir(results_dir)
    if not rd.root.is_dir():
        raise InputError("no such results folder.", path=str(rd.root))
    return rd


def _job_files(folder: Path, suffix: str) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.endswith(suffix) and not p.name.startswith("."))


def load(results_dir, table: str = SUMMARY) -> pd.DataFrame:
    """Every row of one table of a results folder as one DataFrame.

    ``table`` is ``"summary"`` (default) or an optional table such as ``"blocks"``.  Rows
    come in the manifest's job order (traces, then grid points, then seeds), each job's rows
    in the study's order.  Only complete files are read (temporary files are hidden).
    """
    import pyarrow.parquet as pq

    rd = _existing(results_dir)
    files = _job_files(rd.table_dir(table), ".parquet")
    if not files:
        if table != SUMMARY and not rd.table_dir(table).is_dir():
            raise InputError(f"has no {table!r} table.", path=str(rd.root))
        return pd.DataFrame()
    manifest = rd.read_manifest() or {"jobs": []}
    order = {j["job_id"]: i for i, j in enumerate(manifest["jobs"])}
    files.sort(key=lambda p: (order.get(p.stem, len(order)), p.stem))
    frames = [pq.read_table(p).to_pandas() for p in files]
    return pd.concat(frames, ignore_index=True)


def failures(results_dir) -> pd.DataFrame:
    """The failed jobs: one row each with its trace, grid flags, seed and error."""
    rd = _existing(results_dir)
    rows = []
    for p in _job_files(rd.root / FAILED, ".json"):
        try:
            rows.append(json.loads(p.read_text(encoding="utf-8")))
        except (json.JSONDecodeError, OSError):
            continue
    return pd.DataFrame(rows)


def status(results_dir) -> dict:
    """Jobs in the manifest that are done, failed (and not done since) and missing, in all
    and per trace (``"traces"``: one dict per trace, in the manifest's order, with its
    ``jobs``, ``done``, ``failed`` and ``missing`` counts)."""
    rd = _existing(results_dir)
    manifest = rd.read_manifest()
    if manifest is None:
        raise InputError(f"has no {MANIFEST}: not a batch results folder.", path=str(rd.root))
    tables = manifest.get("tables", [SUMMARY])
    done, failed, missing = [], [], []
    per_trace: dict[tuple[str, str], dict] = {}
    for job in manifest["jobs"]:
        jid = job["job_id"]
        key = (job.get("trace", ""), job.get("trace_hash", ""))
        t = per_trace.setdefault(
            key, {"trace": key[0], "trace_hash": key[1], "jobs": 0, "done": 0, "failed": 0, "missing": 0}
        )
        t["jobs"] += 1
        if rd.is_done(jid, job.get("tables", tables)):
            done.append(jid)
            t["done"] += 1
        elif rd.failed_path(jid).exists():
            failed.append(jid)
            t["failed"] += 1
        else:
            missing.append(jid)
            t["missing"] += 1
    return {
        "study": manifest["study"],
        "jobs": len(manifest["jobs"]),
        "done": len(done),
        "failed": len(failed),
        "missing": len(missing),
        "failed_ids": failed,
        "missing_ids": missing,
        "tables": tables,
        "traces": list(per_trace.values()),
    }
