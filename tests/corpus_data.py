"""Tiny crf_tagger pipelines and a small corpus in every input format, shared
by the corpus tagging tests (test_corpus.py, test_corpus_ray.py)."""
import json
from pathlib import Path
from typing import Dict, List

import spacy
from spacy.tokens import DocBin
from thinc.api import fix_random_seed

from .test_entities import NER_DATA, ner_examples
from .test_tagger import TRAIN_DATA, make_examples, make_nlp, train

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


def train_tagger(path: Path, *, target: str = "tag") -> Path:
    """Train a tiny crf_tagger pipeline (confidences stored) and save it to `path`."""
    fix_random_seed(0)
    if target == "ents":
        nlp = make_nlp(target="ents", store_confidence=True)
        train(nlp, ner_examples(nlp, NER_DATA), steps=40)
    else:
        nlp = make_nlp(store_confidence=True)
        train(nlp, make_examples(nlp, TRAIN_DATA), steps=30)
    nlp.to_disk(path)
    return path


def records(n: int, prefix: str = "doc") -> List[Dict[str, object]]:
    """`n` JSON records: an id, a text and a carried field."""
    return [{"id": f"{prefix}-{i}", "text": TEXTS[i % len(TEXTS)] + (" eggs" * (i // len(TEXTS))), "n": i} for i in range(n)]


def write_jsonl(path: Path, rows: List[Dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf8")
    return path


def write_text(path: Path, texts: List[str]) -> Path:
    path.write_text("".join(text + "\n" for text in texts), encoding="utf8")
    return path


def write_parquet(path: Path, rows: List[Dict[str, object]], *, text_column: str = "text", row_group_size: int = 4) -> Path:
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
        rows.extend(json.loads(line) for line in path.read_text(encoding="utf8").splitlines())
    return rows


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
