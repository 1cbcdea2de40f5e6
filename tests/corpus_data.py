"""Tiny pipelines and a small corpus in every input format, shared by the
corpus tagging tests (test_corpus.py, test_corpus_faults.py,
test_corpus_ray.py): inputs, the output read back, nlp.pipe's reference and
the command line run in-process."""

import json
import runpy
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import spacy
from spacy.tokens import DocBin
from spacy.training import Example
from thinc.api import fix_random_seed

from .helpers import TRAIN_DATA, make_examples, make_nlp, train

TEXTS = [
    "I like green eggs",
    "Eat blue ham",
    "eggs",
    "I like blue ham and green eggs",
    "Eat green eggs",
    "Anna lives in New York City",
    "New York loves Anna Smith",
    "I like Berlin",
    "ham",
    "Eat eggs and ham",
    "",
]

# entities for the crf_ner pipeline (as tests/components/test_ner.py's)
NER_DATA = [
    ("Anna lives in New York City", [(0, 4, "PER"), (14, 27, "LOC")]),
    ("New York loves Anna Smith", [(0, 8, "LOC"), (15, 25, "PER")]),
    ("I like Berlin", [(7, 13, "LOC")]),
]


def train_tagger(path: Path, *, target: str = "tag") -> Path:
    """Train a tiny pipeline (confidences stored) and save it to `path`: a
    crf_tagger, or for target "ents" a crf_ner."""
    fix_random_seed(0)
    if target == "ents":
        nlp = make_nlp(factory="crf_ner", store_confidence=True)
        train(nlp, [Example.from_dict(nlp.make_doc(text), {"entities": ents}) for text, ents in NER_DATA], steps=40)
    else:
        nlp = make_nlp(store_confidence=True)
        train(nlp, make_examples(nlp, TRAIN_DATA), steps=30)
    nlp.to_disk(path)
    return path


def records(n: int, prefix: str = "doc") -> List[Dict[str, object]]:
    """`n` JSON records: an id, a text and a carried field."""
    return [
        {"id": f"{prefix}-{i}", "text": TEXTS[i % len(TEXTS)] + (" eggs" * (i // len(TEXTS))), "n": i} for i in range(n)
    ]


def write_jsonl(path: Path, rows: List[Dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf8")
    return path


def write_text(path: Path, texts: List[str]) -> Path:
    path.write_text("".join(text + "\n" for text in texts), encoding="utf8")
    return path


def write_parquet(
    path: Path, rows: List[Dict[str, object]], *, text_column: str = "text", row_group_size: int = 4
) -> Path:
    import pyarrow
    import pyarrow.parquet

    renamed = [{(text_column if key == "text" else key): value for key, value in row.items()} for row in rows]
    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(renamed), path, row_group_size=row_group_size)
    return path


def write_docbin(path: Path, texts: List[str]) -> Path:
    """A DocBin of tokenized docs, with gold-looking tags the tagger must replace."""
    nlp = spacy.blank("en")
    doc_bin = DocBin(attrs=["TAG"], store_user_data=True)
    for text in texts:
        doc = nlp.make_doc(text)
        for token in doc:
            token.tag_ = "GOLD"
        doc_bin.add(doc)
    doc_bin.to_disk(path)
    return path


def read_jsonl_rows(folder: Path) -> List[Dict[str, object]]:
    """Every row of every .jsonl shard of an output folder."""
    rows = []
    for path in sorted(folder.glob("*.jsonl")):
        if path.name == "manifest.jsonl":
            continue
        # lines end at "\n" only (str.splitlines would also cut at U+2028)
        rows.extend(json.loads(line) for line in path.read_text(encoding="utf8").split("\n") if line)
    return rows


def read_parquet_rows(folder: Path) -> List[Dict[str, object]]:
    """Every row of every .parquet shard of an output folder."""
    import pyarrow.parquet

    return [row for path in sorted(folder.glob("*.parquet")) for row in pyarrow.parquet.read_table(path).to_pylist()]


def read_docbin_rows(folder: Path, model: Path) -> List[Dict[str, object]]:
    """Every doc of every .spacy shard of an output folder, as a row: its id,
    carried fields, tokens, tags and confidences."""
    nlp = spacy.load(model)  # registers token._.crf_confidence
    rows = []
    for path in sorted(folder.glob("*.spacy")):
        for doc in DocBin().from_disk(path).get_docs(nlp.vocab):
            rows.append(
                {
                    "id": doc.user_data["id"],
                    **doc.user_data["fields"],
                    "tokens": [t.text for t in doc],
                    "tags": [t.tag_ for t in doc],
                    "confidences": [t._.crf_confidence for t in doc],
                }
            )
    return rows


def output_files(folder: Path) -> Dict[str, bytes]:
    """The bytes of an output folder's shards and bad-record files, by name;
    not the manifest (its shards in the order they were done), job.json or
    the job's lock file."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in folder.rglob("*.*")
        if p.is_file() and p.name not in ("manifest.jsonl", "job.json", ".lock")
    }


def reference(model: Path, inputs: Dict[object, object]) -> Dict[object, Dict[str, object]]:
    """nlp.pipe's output by id: tokens, tags, entities and confidences.

    inputs (Dict[object, object]): id -> text, or id -> (words, spaces).
    """
    from spacy.tokens import Doc

    nlp = spacy.load(model)
    ids = list(inputs)
    stream = [
        value if isinstance(value, str) else Doc(nlp.vocab, words=value[0], spaces=value[1])
        for value in inputs.values()
    ]
    out = {}
    for key, doc in zip(ids, nlp.pipe(stream)):
        out[key] = {
            "tokens": [t.text for t in doc],
            "tags": [t.tag_ for t in doc],
            "entities": [(e.start, e.end, e.label_) for e in doc.ents],
            "confidences": [t._.crf_confidence for t in doc],
        }
    return out


def assert_rows_match(rows: List[Dict[str, object]], expected: Dict[object, Dict[str, object]]) -> None:
    """Rows equal nlp.pipe's output, compared by id (order-free), each id once."""
    import pytest

    ids = [row["id"] for row in rows]
    assert sorted(map(str, ids)) == sorted(map(str, expected)), "every document exactly once"
    for row in rows:
        want = expected[row["id"]]
        assert row["tokens"] == want["tokens"]
        if "tags" in row:
            assert row["tags"] == want["tags"]
        if "entities" in row:
            assert [(e["start"], e["end"], e["label"]) for e in row["entities"]] == want["entities"]
        assert row["confidences"] == pytest.approx(want["confidences"], abs=1e-5)


def run_command_line(args: List[object], capsys, monkeypatch) -> Tuple[object, str, str]:
    """`python -m spacy_crf ARGS`, run in this process as Python runs it in
    its own (the package's __main__ module as "__main__", sys.argv set), but
    without starting Python and importing spaCy and torch again, which costs
    10-30 s a command on a busy 2-core machine. (Real processes run the
    command in tests/corpus/test_faults.py and tests/corpus/test_ray_engine.py.)

    capsys, monkeypatch: the test's pytest fixtures.
    RETURNS (Tuple[object, str, str]): the exit status (sys.exit's argument),
        stdout and stderr. An exception other than SystemExit, which a
        process would print as a traceback, propagates.
    """
    import pytest

    monkeypatch.setattr(sys, "argv", ["python -m spacy_crf", *map(str, args)])
    monkeypatch.delitem(sys.modules, "spacy_crf.__main__", raising=False)  # runpy runs it afresh
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("spacy_crf", run_name="__main__")
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def tag_jsonl(model: Path, input: Path, output: Path, **kwargs: Any) -> Any:
    """tag_corpus without a progress bar, to JSON Lines unless told otherwise."""
    from spacy_crf.corpus import tag_corpus

    kwargs.setdefault("progress", False)
    kwargs.setdefault("output_format", "jsonl")
    return tag_corpus(model, input, output, **kwargs)
