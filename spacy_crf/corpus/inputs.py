"""Reading a corpus: the input cut into shards and chunks, and the records of a chunk.

A shard is a fixed range of records (lines, rows or docs) of one input file:
one per file, and a file of more than `shard_size` records is cut into shards
of `shard_size`. A chunk is a range of at most `batch_size` records of one
shard: the unit of work an engine tags at once. Shards and chunks follow from
the input files and the two sizes alone, so every run of a job (and every
engine) cuts the input the same way.

A record is a plain dict: `{"id": ..., "position": int, "text": str or None,
"words": list or None, "spaces": list or None, "fields": dict}` ("words" and
"spaces" for DocBin input, whose tokens are kept). A record that cannot be read
is a bad record (`bad_record`): its id, file, line and coded reason. Parquet
input needs pyarrow (the "corpus" extra).
"""

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy

from ..bounds import MAX_DOCBIN_BYTES
from ..errors import BadRecordError, CorpusErrors
from ..files import FileRefused, file_sha256, read_regular_file
from .parquet import import_pyarrow

INPUT_FORMATS = ("jsonl", "text", "parquet", "docbin")
SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".txt": "text",
    ".text": "text",
    ".parquet": "parquet",
    ".spacy": "docbin",
}
# what a record's position is called in messages
UNITS = {"jsonl": "line", "text": "line", "parquet": "row", "docbin": "doc"}
_BLOCK = 1 << 24  # bytes read at once when counting lines or hashing
# the default bound on a line: 64 MiB, room for a text at spaCy's default
# max_length (1,000,000 characters) in any encoding and its fields
MAX_LINE_BYTES = 64 << 20


class MissingColumnError(ValueError):
    """A Parquet file without the text column (E110): the job's settings, not the file, are at fault."""


@dataclass(frozen=True)
class ReadOptions:
    """How records are read.

    text_field (str): the JSON field or Parquet column that holds the text.
    id_field (str): the field or column carried through as the document id;
        a record without one gets "<file>:<line>".
    max_line_bytes (int): the longest line of a JSON Lines or plain text
        file that is read; a longer one is a bad record, skipped in blocks
        of at most this size (so memory stays bounded whatever the line).
    """

    text_field: str = "text"
    id_field: str = "id"
    max_line_bytes: int = MAX_LINE_BYTES


@dataclass(frozen=True)
class Shard:
    """Records [start, stop) of one input file, tagged into one output file.

    name (str): unique within the job, e.g. "news/part-1.jsonl.00000".
    path (str): the input file.
    source (str): the file's path relative to the input root.
    format (str): one of INPUT_FORMATS.
    start (int): the first record (0-based line, row or doc).
    stop (int): one past the last record.
    size (int): the input file's size in bytes.
    sha256 (str): the input file's sha256 (hex), with `size` its fingerprint.
    mtime_ns (int): the file's modification time when the job planned it,
        with `inode`, `device` and `ctime_ns`, which no user can set: a file
        that changes during the run (rewritten, or replaced by another file,
        whatever its size and mtime) is caught when its shard completes.
    inode (int): the file's inode number when the job planned it.
    device (int): the device of the file system that holds it.
    ctime_ns (int): its status change time.
    problem (str): why the file cannot be read, for a file the job reports
        as one bad record (an empty string for a file that reads).
    """

    name: str
    path: str
    source: str
    format: str
    start: int
    stop: int
    size: int = 0
    sha256: str = ""
    mtime_ns: int = 0
    inode: int = 0
    device: int = 0
    ctime_ns: int = 0
    problem: str = ""


@dataclass(frozen=True)
class Chunk:
    """Records [start, stop) of a shard; `offset` is the byte offset of line
    `start` for line formats (0 otherwise)."""

    shard: Shard
    index: int
    start: int
    stop: int
    offset: int


@dataclass
class ChunkData:
    """What reading a chunk gives: the good records and the bad ones (`bad_record`)."""

    chunk: Chunk
    records: List[Dict[str, Any]]
    bad: List[Dict[str, Any]]


def find_input_files(input_path: Path, *, input_format: Optional[str] = None) -> List[Tuple[Path, str, str]]:
    """The files of an input and their formats, sorted by relative path.

    input_path (Path): a file or a folder (searched recursively; hidden files
        and files of other suffixes are left out when no format is given).
    input_format (Optional[str]): one of INPUT_FORMATS for every file; None
        tells each file's format by its suffix.
    RETURNS (List[Tuple[Path, str, str]]): (file, path relative to the input, format).
    """
    if input_format is not None and input_format not in INPUT_FORMATS:
        raise ValueError(
            CorpusErrors.E107.format(setting="input format", value=input_format, options=list(INPUT_FORMATS))
        )
    if not input_path.exists():
        raise ValueError(CorpusErrors.E101.format(path=input_path))
    if input_path.is_file():
        fmt = input_format or SUFFIXES.get(input_path.suffix.lower())
        if fmt is None:
            raise ValueError(CorpusErrors.E106.format(path=input_path, options=list(INPUT_FORMATS)))
        return [(input_path, input_path.name, fmt)]
    files = []
    for path in sorted(input_path.rglob("*")):
        rel = path.relative_to(input_path)
        if not path.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        fmt = input_format or SUFFIXES.get(path.suffix.lower())
        if fmt is not None:
            files.append((path, rel.as_posix(), fmt))
    return files


def plan_shards(
    input_path: Path,
    *,
    input_format: Optional[str] = None,
    shard_size: int,
    batch_size: int,
    options: ReadOptions = ReadOptions(),
) -> Tuple[List[Shard], Dict[str, List[Chunk]]]:
    """Cut an input into shards and each shard into chunks.

    input_path (Path): a file or a folder of files.
    input_format (Optional[str]): one of INPUT_FORMATS, or None for by suffix.
    shard_size (int): records per shard (the last shard of a file may hold fewer).
    batch_size (int): records per chunk.
    options (ReadOptions): the text and id fields.
    RETURNS (Tuple[List[Shard], Dict[str, List[Chunk]]]): the shards in input
        order, and each shard's chunks by shard name.
    """
    shards: List[Shard] = []
    chunks: Dict[str, List[Chunk]] = {}
    for path, source, fmt in find_input_files(input_path, input_format=input_format):
        # its status before it is read: a change from there on is seen
        stat = path.stat()
        problem = ""
        # each file is read once: its records counted and its bytes hashed
        try:
            if fmt in ("jsonl", "text"):
                n_records, offsets, sha256 = _line_starts(path, shard_size=shard_size, batch_size=batch_size)
            elif fmt == "parquet":
                n_records, offsets, sha256 = _parquet_rows(path, options.text_field), {}, file_sha256(path)
            else:
                docs, sha256 = _docbin_records(str(path))
                n_records, offsets = len(docs), {}
        except (ImportError, MissingColumnError):
            raise  # the job cannot read this format, or was told a column the file lacks
        except Exception as err:  # I/O, ArrowInvalid, spaCy's E1014, zlib.error: the file is bad
            problem, n_records, offsets, sha256 = _unreadable(path, err)
        for k, start in enumerate(range(0, n_records, shard_size)):
            stop = min(start + shard_size, n_records)
            shard = Shard(
                f"{source}.{k:05d}",
                str(path),
                source,
                fmt,
                start,
                stop,
                stat.st_size,
                sha256,
                stat.st_mtime_ns,
                stat.st_ino,
                stat.st_dev,
                stat.st_ctime_ns,
                problem,
            )
            shards.append(shard)
            chunks[shard.name] = [
                Chunk(shard, i, s, min(s + batch_size, stop), offsets.get(s, 0))
                for i, s in enumerate(range(start, stop, batch_size))
            ]
    return shards, chunks


def _unreadable(path: Path, err: BaseException) -> Tuple[str, int, Dict[int, int], str]:
    """A file that cannot be read as its format, as the job plans it: one
    record, which reading reports as bad (why), and its sha256 where its
    bytes read at all."""
    text = str(err).strip()
    reason = f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__
    try:
        sha256 = file_sha256(path)
    except OSError:
        sha256 = ""
    return f"the file cannot be read ({reason})", 1, {}, sha256


def read_chunk(chunk: Chunk, *, options: ReadOptions = ReadOptions(), on_error: str = "skip") -> ChunkData:
    """Read the records of a chunk.

    A chunk whose file fails to read on (an I/O or decoding error) has its
    records from there on reported as bad, so the job goes on.

    chunk (Chunk): the chunk.
    options (ReadOptions): the text and id fields.
    on_error (str): "skip" reports a bad record in ChunkData.bad; "raise"
        raises BadRecordError.
    RETURNS (ChunkData): the records and the bad records.
    """
    shard = chunk.shard
    data = ChunkData(chunk, [], [])
    if shard.problem:
        data.bad.append(bad_record(shard, chunk.start, "E105", shard.problem))
        if on_error == "raise":
            raise BadRecordError(data.bad[0]["message"])
        return data
    if shard.format in ("jsonl", "text"):
        items = _read_lines(shard, chunk, options)
    elif shard.format == "parquet":
        items = _read_parquet(shard, chunk, options)
    else:
        items = _read_docbin(shard, chunk)
    next_position = chunk.start
    try:
        for position, record, problem in items:
            next_position = position + 1
            if problem is None:
                assert record is not None  # a good item has its record (Item)
                data.records.append(record)
            else:
                data.bad.append(bad_record(shard, position, "E105", *problem))
    except Exception as err:  # any failure to read is the records' from here on
        reason = f"cannot read the file from here on ({type(err).__name__}: {err})"
        data.bad.extend(bad_record(shard, position, "E105", reason) for position in range(next_position, chunk.stop))
    if data.bad and on_error == "raise":
        raise BadRecordError(data.bad[0]["message"])
    return data


def input_changed(shard: Shard) -> Optional[str]:
    """How a shard's input file differs from when the job planned it: another
    file in its place (its inode), or its size, modification time or status
    change time (which changes with any write, and which no user can set back);
    None where none of them does."""
    try:
        stat = os.stat(shard.path)
    except OSError as err:
        return f"it cannot be read now: {err.strerror or err}"
    if shard.inode and (stat.st_ino, stat.st_dev) != (shard.inode, shard.device):
        return "another file took its place since the job began"
    if stat.st_size != shard.size:
        return f"{shard.size} bytes when the job began, {stat.st_size} now"
    if shard.mtime_ns and stat.st_mtime_ns != shard.mtime_ns:
        return "modified since the job began"
    if shard.ctime_ns and stat.st_ctime_ns != shard.ctime_ns:
        return "written or its status changed since the job began (its ctime), whatever its mtime says"
    return None


def input_checksum_changed(shard: Shard) -> Optional[str]:
    """Where a shard's input file no longer has the sha256 the job planned
    with, what differs; None where it has it."""
    if not shard.sha256:  # a file the job could not read when it planned it: reported already
        return None
    try:
        sha256 = file_sha256(shard.path)
    except OSError as err:
        return f"it cannot be read now: {err.strerror or err}"
    if sha256 != shard.sha256:
        return f"its sha256 is {sha256}, {shard.sha256} when the job planned it"
    return None


def bad_record(shard: Shard, position: int, code: str, reason: str, record_id: Any = None) -> Dict[str, Any]:
    """A bad record as the job reports it.

    shard (Shard): the record's shard.
    position (int): its 0-based line, row or doc in the file.
    code (str): "E105" (it cannot be read), "E114" (the pipeline cannot tag
        it) or "E115" (its output cannot be written).
    reason (str): what is wrong with it.
    record_id (Any): its id; None for "<file>:<line>", the id of a record
        without one.
    RETURNS (Dict[str, Any]): "id", "source" (the file relative to the
        input), "position" (1-based line, row or doc), "code" and "message".
    """
    if record_id is None:
        record_id = _record_id(shard, position)
    where = f"{UNITS[shard.format]} {position + 1}"
    message = getattr(CorpusErrors, code).format(path=shard.path, where=where, reason=reason, id=repr(record_id))
    return {
        "id": record_id,
        "source": readable(shard.source),
        "position": position + 1,
        "code": code,
        "message": message,
    }


def _record_id(shard: Shard, position: int) -> str:
    return f"{readable(shard.source)}:{position + 1}"


def readable(name: str) -> str:
    """A file name as text that UTF-8 encodes: the bytes of a name that is
    not UTF-8 (os.fsdecode's lone surrogates) written as "\\xe9"."""
    return os.fsencode(name).decode("utf8", "backslashreplace")


def _line_starts(path: Path, *, shard_size: int, batch_size: int) -> Tuple[int, Dict[int, int], str]:
    """The number of lines of a file, the byte offset of every line that
    starts a chunk (line % shard_size % batch_size == 0), and the file's sha256."""
    offsets = {0: 0}
    n_newlines = 0
    position = 0
    last = b"\n"
    digest = hashlib.sha256()
    with path.open("rb") as file_:
        while True:
            block = file_.read(_BLOCK)
            if not block:
                break
            digest.update(block)
            ends = numpy.flatnonzero(numpy.frombuffer(block, dtype=numpy.uint8) == 10)
            starts = n_newlines + 1 + numpy.arange(len(ends))  # the line after each newline
            keep = (starts % shard_size) % batch_size == 0
            offsets.update(zip(starts[keep].tolist(), (position + ends[keep] + 1).tolist()))
            n_newlines += len(ends)
            position += len(block)
            last = block[-1:]
    n_lines = n_newlines + (0 if last == b"\n" else 1)
    return n_lines, offsets, digest.hexdigest()


# what the readers yield for each record: (position, record, None) for a good
# one, (position, None, (reason, its id or None)) for a bad one
Item = Tuple[int, Optional[Dict[str, Any]], Optional[Tuple[str, Any]]]


def _read_lines(shard: Shard, chunk: Chunk, options: ReadOptions) -> Iterator[Item]:
    limit = options.max_line_bytes
    with open(shard.path, "rb") as file_:
        file_.seek(chunk.offset)
        for position in range(chunk.start, chunk.stop):
            line_bytes = file_.readline(limit + 1)
            if not line_bytes:  # the end of the file, before the planned end: it shrank
                yield position, None, ("the file ended before this line: it changed after the job planned it", None)
                continue
            if len(line_bytes) > limit and not line_bytes.endswith(b"\n"):
                del line_bytes
                while True:  # the rest of the line, in blocks of at most 1 MiB
                    rest = file_.readline(min(limit, 1 << 20))
                    if not rest or rest.endswith(b"\n"):
                        break
                reason = (
                    f"the line has more than {limit:,} bytes, the bound on a line (max_line_bytes; "
                    "raise it with --max-line-bytes)"
                )
                yield position, None, (reason, None)
                continue
            raw = line_bytes.rstrip(b"\r\n")
            if not raw.strip():
                continue  # blank lines are no documents
            try:
                line = raw.decode("utf8")
            except UnicodeDecodeError as err:
                yield position, None, (f"invalid UTF-8 at byte {err.start}", _lenient_id(raw, shard, options))
                continue
            if shard.format == "text":
                yield position, _record(_record_id(shard, position), position, text=line), None
                continue
            try:
                obj = json.loads(line)
            except ValueError as err:
                yield position, None, (f"not valid JSON ({err})", None)
                continue
            except RecursionError:
                yield position, None, ("its JSON is nested too deeply to read", None)
                continue
            yield (position, *_json_record(obj, shard, position, options))


def _lenient_id(raw: bytes, shard: Shard, options: ReadOptions) -> Any:
    """The id of a JSON line that is not valid UTF-8, where the rest of the
    line gives one; None otherwise."""
    if shard.format != "jsonl":
        return None
    try:
        obj = json.loads(raw.decode("utf8", errors="replace"))
    except (ValueError, RecursionError):
        return None
    record_id = obj.get(options.id_field) if isinstance(obj, dict) else None
    return None if "\ufffd" in str(record_id) else record_id


def _json_record(
    obj: Any, shard: Shard, position: int, options: ReadOptions
) -> Tuple[Optional[Dict[str, Any]], Optional[Tuple[str, Any]]]:
    if not isinstance(obj, dict):
        return None, (f"expected a JSON object, got {type(obj).__name__}", None)
    record_id = obj.pop(options.id_field, None)
    if options.text_field not in obj:
        return None, (f"no field '{options.text_field}' (fields: {sorted(obj)})", record_id)
    text = obj.pop(options.text_field)
    if not isinstance(text, str):
        return None, (f"field '{options.text_field}' is {type(text).__name__}, not a string", record_id)
    if record_id is None:
        record_id = _record_id(shard, position)
    return _record(record_id, position, text=text, fields=obj), None


def _record(
    record_id: Any,
    position: int,
    *,
    text: Optional[str] = None,
    words: Optional[List[str]] = None,
    spaces: Optional[List[bool]] = None,
    fields: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    return {
        "id": record_id,
        "position": position,
        "text": text,
        "words": words,
        "spaces": spaces,
        "fields": fields or {},
    }


def _parquet_rows(path: Path, column: str) -> int:
    pyarrow = import_pyarrow(action="Reading")
    file_ = pyarrow.parquet.ParquetFile(path)
    names = file_.schema_arrow.names
    if column not in names:
        raise MissingColumnError(CorpusErrors.E110.format(path=path, column=column, columns=names))
    return file_.metadata.num_rows


def _read_parquet(shard: Shard, chunk: Chunk, options: ReadOptions) -> Iterator[Item]:
    rows = _PARQUET_STREAM.rows(shard, chunk.start, chunk.stop)
    for position, obj in enumerate(rows, start=chunk.start):
        text = obj.pop(options.text_field)
        record_id = obj.pop(options.id_field, None)
        if not isinstance(text, str):
            reason = "the text is null" if text is None else f"the text is {type(text).__name__}, not a string"
            yield position, None, (f"column '{options.text_field}': {reason}", record_id)
            continue
        if record_id is None:
            record_id = _record_id(shard, position)
        yield position, _record(record_id, position, text=text, fields=obj), None


class _ParquetStream:
    """The rows of one Parquet file, read on from where the last chunk
    ended (one file at a time, per process).

    A row group is read in record batches (pyarrow's iter_batches, through a
    buffered stream), so a chunk that follows the one before it reads its own
    rows only: the time and memory a chunk takes do not grow with the size of
    its row group. A chunk before the stream's place (chunks out of order)
    starts again from the first row of its row group."""

    BATCH_ROWS = 1024  # rows decoded at once
    BUFFER_BYTES = 1 << 20  # bytes of a column chunk read at once

    def __init__(self) -> None:
        self.key: Optional[Tuple[str, int, int, int]] = None
        self.file: Any = None
        self.batches: Iterator[Any] = iter(())
        self.batch: Any = None  # the record batch at hand
        self.first = 0  # the row of its first row

    def rows(self, shard: Shard, start: int, stop: int) -> List[Dict[str, Any]]:
        """Rows [start, stop) of the shard's file, as dicts."""
        key = (shard.path, shard.size, shard.mtime_ns, shard.inode)
        if key != self.key or self.batch is None or self.first > start:
            self._open(shard, key, start)
        rows: List[Dict[str, Any]] = []
        while self.batch is not None and self.first < stop:
            end = self.first + self.batch.num_rows
            if end > start:
                low = max(start, self.first) - self.first
                high = min(stop, end) - self.first
                rows.extend(self.batch.slice(low, high - low).to_pylist())
            if end > stop:
                break  # the next chunk begins inside this batch
            self.batch, self.first = next(self.batches, None), end
        return rows

    def _open(self, shard: Shard, key: Tuple[str, int, int, int], start: int) -> None:
        pyarrow = import_pyarrow(action="Reading")
        self.key, self.batch = None, None
        self.file = pyarrow.parquet.ParquetFile(shard.path, buffer_size=self.BUFFER_BYTES)
        metadata = self.file.metadata
        group, first = 0, 0
        while group < metadata.num_row_groups - 1 and first + metadata.row_group(group).num_rows <= start:
            first += metadata.row_group(group).num_rows
            group += 1
        self.batches = self.file.iter_batches(
            batch_size=self.BATCH_ROWS, row_groups=range(group, metadata.num_row_groups), use_threads=False
        )
        self.batch, self.first, self.key = next(self.batches, None), first, key


_PARQUET_STREAM = _ParquetStream()


_DOCBIN_CACHE: Dict[str, Any] = {}


def _docbin_records(path: str) -> Tuple[List[Tuple[List[str], List[bool], Dict[str, Any]]], str]:
    """The words, spaces and user data of every doc of a DocBin file, and the
    file's sha256, cached (one file at a time) so that its chunks do not read
    it again."""
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    stat = os.stat(path)
    key = f"{path}:{stat.st_size}:{stat.st_mtime_ns}"
    if key not in _DOCBIN_CACHE:
        try:
            data = read_regular_file(path, MAX_DOCBIN_BYTES.value())
        except FileRefused as refused:
            if refused.size is None:
                raise
            raise ValueError(
                f"it has {refused.size:,} bytes, over the bound of {MAX_DOCBIN_BYTES.value():,} "
                f"{MAX_DOCBIN_BYTES.name} ({MAX_DOCBIN_BYTES.how_to_raise()})"
            ) from None
        doc_bin = DocBin(store_user_data=True).from_bytes(data)
        docs = [
            ([t.text for t in doc], [bool(t.whitespace_) for t in doc], dict(doc.user_data))
            for doc in doc_bin.get_docs(Vocab())
        ]
        _DOCBIN_CACHE.clear()
        _DOCBIN_CACHE[key] = (docs, hashlib.sha256(data).hexdigest())
    return _DOCBIN_CACHE[key]


def _read_docbin(shard: Shard, chunk: Chunk) -> Iterator[Item]:
    docs, _ = _docbin_records(shard.path)
    for position in range(chunk.start, chunk.stop):
        words, spaces, user_data = docs[position]
        record_id = user_data.get("id")
        if record_id is None:
            record_id = _record_id(shard, position)
        fields = user_data.get("fields")
        yield (
            position,
            _record(record_id, position, words=words, spaces=spaces, fields=fields if isinstance(fields, dict) else {}),
            None,
        )
