"""Writing tagged shards: the output of a doc, whole shard files, the manifest.

Output formats:
- "docbin": spaCy's DocBin, one `.spacy` file per shard; each doc keeps its
  id and carried fields in `doc.user_data["id"]` / `["fields"]` (and the
  confidences, when stored, as token._.crf_confidence).
- "jsonl" / "parquet": one row per doc: the carried fields, then "id",
  "tokens", and "tags" (targets with "tag"), "pos" (with "pos"), "morphs"
  (with "morph": each token's FEATS string, "" for none or unset),
  "entities" (target "ents": token offsets, label and text) and
  "confidences" (when the component stores them). "parquet" needs pyarrow (the "corpus" extra).

Every file of a job is written to a hidden temporary file in its folder, then
renamed over the old one (`spacy_crf.files.write_atomic`): a kill leaves the old file or the
new one, whole. A shard's bad records go to bad_records/ (one JSON Lines file per
shard that has any). The manifest (manifest.jsonl, one line per finished shard,
written after the shard's files) is the commit: it lists each shard's files
with their sizes and sha256, which a rerun checks before it trusts them. The
job's settings and the fingerprints of its input files are in job.json.

The job holds OUTPUT/.lock while it runs (one job per folder), and writes,
renames and deletes only real files inside OUTPUT: a symbolic link where it
would write is refused (E120), never followed.
"""

import contextlib
import json
import os
import pickle
import re
import socket
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from spacy.tokens import Doc, DocBin

from ..errors import CorpusErrors, CorpusWarnings
from ..files import TEMPORARY_PREFIX, file_sha256, write_atomic
from .parquet import import_pyarrow

OUTPUT_FORMATS = ("docbin", "parquet", "jsonl")
EXTENSIONS = {"docbin": ".spacy", "parquet": ".parquet", "jsonl": ".jsonl"}
MANIFEST = "manifest.jsonl"
JOB = "job.json"
BAD_RECORDS = "bad_records"
LOCK = ".lock"
# the file of a shard: its encoded name, a shard number and a format's suffix
SHARD_FILE = re.compile(r".+\.\d{5}\.(spacy|parquet|jsonl)$")


@dataclass(frozen=True)
class Outputs:
    """What a pipeline's spacy-crf components write.

    targets (Tuple[str, ...]): "tag", "pos", "morph" and/or "ents".
    confidence (bool): whether token._.crf_confidence is set.
    """

    targets: Tuple[str, ...]
    confidence: bool


def doc_row(doc: Doc, record: Dict[str, Any], outputs: Outputs) -> Dict[str, Any]:
    """The output row of a tagged doc.

    doc (Doc): the tagged doc.
    record (Dict[str, Any]): its input record (id and carried fields).
    outputs (Outputs): what to write.
    RETURNS (Dict[str, Any]): the row.
    """
    row = dict(record["fields"])
    row["id"] = record["id"]
    row["tokens"] = [token.text for token in doc]
    if "tag" in outputs.targets:
        row["tags"] = [token.tag_ for token in doc]
    if "pos" in outputs.targets:
        row["pos"] = [token.pos_ for token in doc]
    if "morph" in outputs.targets:
        row["morphs"] = [str(token.morph) for token in doc]
    if "ents" in outputs.targets:
        row["entities"] = [
            {"start": ent.start, "end": ent.end, "label": ent.label_, "text": ent.text} for ent in doc.ents
        ]
    if outputs.confidence:
        row["confidences"] = [_float(token._.crf_confidence) for token in doc]
    return row


def _float(value: Any) -> Any:
    return None if value is None else float(value)


def jsonl_line(row: Dict[str, Any]) -> bytes:
    """A row as one line of JSON Lines, UTF-8. The line separators that JSON
    leaves raw (U+0085, U+2028, U+2029: str.splitlines and JavaScript break
    lines there) are written escaped, so a line ends at "\\n" for any reader."""
    text = json.dumps(row, ensure_ascii=False, default=str).translate(_ESCAPED_SEPARATORS)
    return text.encode("utf8") + b"\n"


_ESCAPED_SEPARATORS = {ord(c): f"\\u{ord(c):04x}" for c in "\u0085\u2028\u2029"}


def encode_chunk(docs: List[Doc], records: List[Dict[str, Any]], *, output_format: str, outputs: Outputs) -> bytes:
    """The output of a chunk's docs, as bytes that cross process boundaries.

    docs (List[Doc]): the tagged docs.
    records (List[Dict[str, Any]]): their records, in the same order.
    output_format (str): one of OUTPUT_FORMATS.
    outputs (Outputs): what to write.
    RETURNS (bytes): DocBin bytes ("docbin"), JSON lines ("jsonl") or the
        pickled rows ("parquet", checked to convert to Arrow).
    """
    if output_format == "docbin":
        doc_bin = DocBin(store_user_data=True)
        for doc, record in zip(docs, records):
            doc.user_data["id"] = record["id"]
            doc.user_data["fields"] = record["fields"]
            doc_bin.add(doc)
        return doc_bin.to_bytes()
    rows = [doc_row(doc, record, outputs) for doc, record in zip(docs, records)]
    if output_format == "jsonl":
        return b"".join(jsonl_line(row) for row in rows)
    import_pyarrow(action="Writing").Table.from_pylist(rows)  # raises here, for the chunk, not for the shard
    return pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)


def shard_file(shard_name: str, output_format: str) -> str:
    """The output file of a shard: its name with "%" as "%25" and "/" as
    "%2F" (so distinct inputs never share a file, and the name reads back),
    and the format's suffix."""
    return shard_name.replace("%", "%25").replace("/", "%2F") + EXTENSIONS[output_format]


def check_real(output: Path, name: str) -> Path:
    """The path of `name` inside the output folder, refused (E120) where it
    or a folder on the way to it is a symbolic link."""
    path = output
    for part in Path(name).parts:
        path = path / part
        if path.is_symlink():
            raise ValueError(CorpusErrors.E120.format(path=path))
    return path


@contextlib.contextmanager
def job_lock(output: Path) -> Iterator[None]:
    """Hold the output folder for one job; a second job gets E121 at once.

    The lock is an flock on OUTPUT/.lock, which the system releases when its
    holder ends, however it ends: a killed job leaves no stale lock. The file
    names the holder (host and pid) for the message."""
    try:
        fd = os.open(check_real(output, LOCK), os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as err:
        raise ValueError(CorpusErrors.E118.format(path=output, reason=err.strerror or err)) from err
    if not _try_lock(fd):
        try:
            holder = os.read(fd, 200).decode("utf8", "replace").strip() or "unknown"
        except OSError:
            holder = "unknown"
        os.close(fd)
        raise ValueError(CorpusErrors.E121.format(path=output, holder=f"host and pid: {holder}"))
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode("utf8"))
        yield
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    """Lock an open file for this process without waiting: flock, or on
    Windows msvcrt's lock of its first byte (both end with the process).
    RETURNS (bool): False where another process holds it."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # Windows only
        except OSError:
            return False
        os.lseek(fd, 0, os.SEEK_SET)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def write_shard(output: Path, shard_name: str, payloads: Iterable[bytes], *, output_format: str) -> str:
    """Write a shard whole: a temporary file, flushed to disk, then renamed.

    output (Path): the output folder.
    shard_name (str): the shard.
    payloads (Iterable[bytes]): its chunks' encoded outputs, in order.
    output_format (str): one of OUTPUT_FORMATS.
    RETURNS (str): the file name within the output folder.
    """
    name = shard_file(shard_name, output_format)
    check_real(output, name)
    if output_format == "jsonl":
        write_atomic(output / name, b"".join(payloads))
    elif output_format == "docbin":
        doc_bin = DocBin(store_user_data=True)
        for payload in payloads:
            doc_bin.merge(DocBin(store_user_data=True).from_bytes(payload))
        write_atomic(output / name, doc_bin.to_bytes())
    else:
        pyarrow = import_pyarrow(action="Writing")
        table = pyarrow.Table.from_pylist([row for payload in payloads for row in pickle.loads(payload)])
        write_atomic(output / name, lambda tmp: pyarrow.parquet.write_table(table, tmp))
    return name


def write_bad_records(output: Path, shard_name: str, bad: List[Dict[str, Any]]) -> Optional[str]:
    """Write a shard's bad records as JSON lines into bad_records/, whole, or
    delete the file of an earlier attempt when it has none.

    output (Path): the output folder.
    shard_name (str): the shard.
    bad (List[Dict[str, Any]]): its bad records (readers.bad_record), in input order.
    RETURNS (Optional[str]): the file's path within the output folder, or None.
    """
    name = f"{BAD_RECORDS}/{shard_file(shard_name, 'jsonl')}"
    path = check_real(output, name)
    if not bad:
        path.unlink(missing_ok=True)
        return None
    (output / BAD_RECORDS).mkdir(exist_ok=True)
    write_atomic(output / name, b"".join(json.dumps(entry, default=str).encode("ascii") + b"\n" for entry in bad))
    return name


def file_entry(output: Path, name: str) -> Dict[str, Any]:
    """A written file as the manifest lists it: {"file", "size", "sha256"}."""
    path = output / name
    return {"file": name, "size": path.stat().st_size, "sha256": file_sha256(path)}


def remove_temporary_files(output: Path) -> None:
    """Delete the partial files that a killed job left behind (real files
    only: a folder or link of that name stays)."""
    check_real(output, BAD_RECORDS)
    for folder in (output, output / BAD_RECORDS):
        for path in folder.glob(TEMPORARY_PREFIX + "*"):
            if path.is_file() and not path.is_symlink():
                path.unlink(missing_ok=True)


def clear_job(output: Path) -> None:
    """Delete an earlier job from an output folder: the shard and bad-record
    files that its manifest lists, and those of shards it wrote but had not
    yet listed when it was killed (any file named as a shard), the manifest,
    the settings and temporary files. A listed file outside the output
    folder is left alone (W101), and so is a link."""
    root = output.resolve()
    check_real(output, BAD_RECORDS)
    for folder in (output, output / BAD_RECORDS):
        for path in folder.glob("*"):
            if SHARD_FILE.fullmatch(path.name) and path.is_file() and not path.is_symlink():
                path.unlink(missing_ok=True)
    for entry in read_manifest(output).values():
        for listed in (entry.get("file"), (entry.get("bad") or {}).get("file")):
            if not isinstance(listed, str):
                continue
            if not inside(output, listed):
                warnings.warn(CorpusWarnings.W101.format(file=listed, path=output), stacklevel=2)
                continue
            (root / listed).unlink(missing_ok=True)
    for name in (MANIFEST, JOB):
        (output / name).unlink(missing_ok=True)
    remove_temporary_files(output)


def inside(output: Path, name: str) -> bool:
    """Whether a file that a manifest names is inside the output folder, once
    "..", absolute paths and links are resolved."""
    root = output.resolve()
    path = (root / name).resolve()
    return path != root and path.is_relative_to(root)


def check_job(output: Path, settings: Dict[str, Any], inputs: Dict[str, Dict[str, Any]]) -> None:
    """Record a job's settings and input fingerprints in a new output folder,
    or check that an existing one holds a job with the same settings (E108 if
    not) over the same input (E116 if not).

    output (Path): the output folder.
    settings (Dict[str, Any]): the settings that shape the output.
    inputs (Dict[str, Dict[str, Any]]): each input file's "size" and "sha256",
        by its path relative to the input.
    """
    path = output / JOB
    if path.exists():
        old = json.loads(path.read_text(encoding="utf8"))
        diff = [
            f"{key}: {old.get(key)!r} there, {value!r} now" for key, value in settings.items() if old.get(key) != value
        ]
        if diff:
            raise ValueError(CorpusErrors.E108.format(path=output, detail="; ".join(diff)))
        old_inputs = old.get("inputs", {})
        changed = [
            f"{source} changed" for source in inputs if source in old_inputs and old_inputs[source] != inputs[source]
        ]
        changed += [f"{source} is new" for source in inputs if source not in old_inputs]
        changed += [f"{source} is gone" for source in old_inputs if source not in inputs]
        if changed:
            more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
            raise ValueError(CorpusErrors.E116.format(path=output, detail=", ".join(changed[:5]) + more))
        return
    write_atomic(path, (json.dumps({**settings, "inputs": inputs}, indent=2) + "\n").encode("utf8"))


def read_manifest(output: Path) -> Dict[str, Dict[str, Any]]:
    """The finished shards of an output folder, by shard name.

    A line that does not parse is ignored; a shard listed twice counts once,
    with its last entry.
    """
    entries: Dict[str, Dict[str, Any]] = {}
    path = output / MANIFEST
    if not path.exists():
        return entries
    for line in path.read_text(encoding="utf8").splitlines():
        try:
            entry = json.loads(line)
            entries[entry["shard"]] = entry
        except (ValueError, KeyError, TypeError):
            continue
    return entries


def write_manifest(output: Path, entries: Dict[str, Dict[str, Any]]) -> None:
    """Write the manifest whole (`spacy_crf.files.write_atomic`), one line per finished shard."""
    write_atomic(output / MANIFEST, b"".join(json.dumps(entry).encode("ascii") + b"\n" for entry in entries.values()))


def verify_shard(output: Path, entry: Dict[str, Any], *, start: int, stop: int) -> Optional[str]:
    """Check a finished shard before it is trusted: its bounds, and its files'
    places, sizes and sha256.

    output (Path): the output folder.
    entry (Dict[str, Any]): the shard's manifest entry.
    start (int): the shard's first record in this job's plan.
    stop (int): one past its last.
    RETURNS (Optional[str]): what is wrong, or None for a shard to trust.
    """
    if entry.get("start") != start or entry.get("stop") != stop:
        return f"records {entry.get('start')}-{entry.get('stop')} listed, {start}-{stop} planned"
    for listed in (entry, entry.get("bad")):
        if listed is None:
            continue
        name = listed.get("file")
        if not isinstance(name, str) or not inside(output, name):
            return f"its file {name!r} is not in the output folder"
        path = output / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != listed.get("size"):
            return f"{name} has {path.stat().st_size} bytes, {listed.get('size')} listed"
        if file_sha256(path) != listed.get("sha256"):
            return f"{name} does not match its sha256"
    return None
