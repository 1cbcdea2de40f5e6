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

Each shard is written to a hidden temporary file in the output folder, then
renamed: a shard file is whole or absent. The manifest (manifest.jsonl, one
line per finished shard, appended after the rename) says which shards are
done and how many documents each holds; the job's settings are in job.json.
"""
import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Tuple

from spacy.tokens import Doc, DocBin

from .errors import CorpusErrors
from .parquet import import_pyarrow

OUTPUT_FORMATS = ("docbin", "parquet", "jsonl")
EXTENSIONS = {"docbin": ".spacy", "parquet": ".parquet", "jsonl": ".jsonl"}
MANIFEST = "manifest.jsonl"
JOB = "job.json"
TMP_PREFIX = ".tmp-"


@dataclass(frozen=True)
class Outputs:
    """What a pipeline's crf_tagger components write.

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


def encode_chunk(docs: List[Doc], records: List[Dict[str, Any]], *, output_format: str, outputs: Outputs) -> bytes:
    """The output of a chunk's docs, as bytes that cross process boundaries.

    docs (List[Doc]): the tagged docs.
    records (List[Dict[str, Any]]): their records, in the same order.
    output_format (str): one of OUTPUT_FORMATS.
    outputs (Outputs): what to write.
    RETURNS (bytes): DocBin bytes ("docbin"), JSON lines ("jsonl") or the
        pickled rows ("parquet").
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
        return b"".join(json.dumps(row, ensure_ascii=False, default=str).encode("utf8") + b"\n" for row in rows)
    return pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)


def shard_file(shard_name: str, output_format: str) -> str:
    """The output file of a shard: its name with "/" as "__", and the format's suffix."""
    return shard_name.replace("/", "__") + EXTENSIONS[output_format]


def write_shard(output: Path, shard_name: str, payloads: Iterable[bytes], *, output_format: str) -> str:
    """Write a shard whole: a temporary file, flushed to disk, then renamed.

    output (Path): the output folder.
    shard_name (str): the shard.
    payloads (Iterable[bytes]): its chunks' encoded outputs, in order.
    output_format (str): one of OUTPUT_FORMATS.
    RETURNS (str): the file name within the output folder.
    """
    name = shard_file(shard_name, output_format)
    tmp = output / (TMP_PREFIX + name)
    if output_format == "jsonl":
        data = b"".join(payloads)
    elif output_format == "docbin":
        doc_bin = DocBin(store_user_data=True)
        for payload in payloads:
            doc_bin.merge(DocBin(store_user_data=True).from_bytes(payload))
        data = doc_bin.to_bytes()
    else:
        pyarrow = import_pyarrow(action="Writing")
        rows = [row for payload in payloads for row in pickle.loads(payload)]
        pyarrow.parquet.write_table(pyarrow.Table.from_pylist(rows), tmp)
        data = None
    if data is not None:
        with tmp.open("wb") as file_:
            file_.write(data)
            file_.flush()
            os.fsync(file_.fileno())
    os.replace(tmp, output / name)
    return name


def remove_temporary_files(output: Path) -> None:
    """Delete the partial shard files that a killed job left behind."""
    for path in output.glob(TMP_PREFIX + "*"):
        path.unlink()


def clear_job(output: Path) -> None:
    """Delete an earlier job from an output folder: the shard files that its
    manifest lists, the manifest, the settings and temporary files."""
    for entry in read_manifest(output).values():
        (output / entry["file"]).unlink(missing_ok=True)
    for name in (MANIFEST, JOB):
        (output / name).unlink(missing_ok=True)
    remove_temporary_files(output)


def check_job(output: Path, settings: Dict[str, Any]) -> None:
    """Record a job's settings in a new output folder, or check that an
    existing one holds a job with the same settings (raises E108 if not)."""
    path = output / JOB
    if path.exists():
        old = json.loads(path.read_text(encoding="utf8"))
        diff = [f"{key}: {old.get(key)!r} there, {value!r} now" for key, value in settings.items() if old.get(key) != value]
        if diff:
            raise ValueError(CorpusErrors.E108.format(path=output, detail="; ".join(diff)))
        return
    tmp = output / (TMP_PREFIX + JOB)
    tmp.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf8")
    os.replace(tmp, path)


def read_manifest(output: Path) -> Dict[str, Dict[str, Any]]:
    """The finished shards of an output folder, by shard name.

    A line that does not parse (a job killed while appending it) is ignored;
    a shard listed twice counts once, with its last entry.
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


def append_manifest(output: Path, entry: Dict[str, Any]) -> None:
    """Add a finished shard to the manifest (one line, flushed to disk)."""
    path = output / MANIFEST
    # a torn last line from a killed job must not swallow this entry
    prefix = b""
    if path.exists() and path.stat().st_size:
        with path.open("rb") as file_:
            file_.seek(-1, os.SEEK_END)
            prefix = b"" if file_.read(1) == b"\n" else b"\n"
    with path.open("ab") as file_:
        file_.write(prefix + json.dumps(entry, ensure_ascii=False).encode("utf8") + b"\n")
        file_.flush()
        os.fsync(file_.fileno())


def is_complete(output: Path, entry: Dict[str, Any], *, start: int, stop: int) -> bool:
    """Whether a manifest entry stands for a finished shard with these bounds."""
    return entry.get("start") == start and entry.get("stop") == stop and (output / entry["file"]).exists()
