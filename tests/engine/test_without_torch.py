"""Serving without torch, for real: a subprocess whose `import torch` fails
(a meta-path blocker, before anything is imported) loads a pipeline trained
and saved here, tags, and gives marginals, n-best paths and uncertainty;
training and torch-only features raise E050, torch.save weights of earlier
releases E051. (.ci/run checks the same in a fresh venv without torch.)"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy

from tests.helpers import make_examples, make_nlp, train

DATA_100 = Path(__file__).parents[1] / "data" / "legacy-1.0.0"
# spacy-transformers (installed with the test extra) needs torch and is no
# part of a serving environment: its entry points are hidden from spaCy's
# registries, as if it were not installed
BLOCKER = """
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "spacy_transformers"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _NoTorch())
import catalogue
_entry_points = catalogue.Registry._get_entry_points
catalogue.Registry._get_entry_points = lambda self: [
    ep for ep in _entry_points(self) if not ep.value.startswith("spacy_transformers")
]
"""
TEXTS = ["I like blue ham", "Eat green eggs", "", "eggs eggs"]


def run_without_torch(code: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_serving_without_torch(tmp_path):
    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=20)
    nlp.to_disk(tmp_path / "p")
    tagger = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(text) for text in TEXTS]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS)))
    result = run_without_torch(
        f"""
        import json
        import numpy, spacy
        try:
            import torch
            torch_imports = True
        except ImportError:
            torch_imports = False
        nlp = spacy.load({str(tmp_path / "p")!r})
        tagger = nlp.get_pipe("crf_tagger")
        texts = {TEXTS!r}
        docs = [nlp.make_doc(t) for t in texts]
        out = {{
            "torch_imports": torch_imports,
            "torch_loaded": "torch" in sys.modules,
            "tags": [[t.tag_ for t in doc] for doc in nlp.pipe(texts)],
            "first": [t.tag_ for t in nlp(texts[0])],
            "marginals": [m.tolist() for m in tagger.marginals(docs)],
            "nbest": tagger.nbest(docs, 2),
            "uncertainty": [p for p, _ in tagger.uncertainty(docs)],
        }}
        try:
            nlp.update([], sgd=None)
            from spacy.training import Example
            nlp.update([Example.from_dict(nlp.make_doc("eggs"), {{"tags": ["N"]}})])
            out["update"] = "ran"
        except ImportError as e:
            out["update"] = str(e)
        from spacy_crf.__main__ import main
        out["tag_job"] = main(
            ["tag", {str(tmp_path / "p")!r}, {str(tmp_path / "in.jsonl")!r}, {str(tmp_path / "out")!r},
             "--output-format", "jsonl", "--no-progress"]
        )
        import os
        os.environ["SPACY_CRF_ENGINE"] = "torch"
        try:
            nlp("eggs")
            out["torch_engine"] = "ran"
        except ImportError as e:
            out["torch_engine"] = str(e)
        del os.environ["SPACY_CRF_ENGINE"]
        try:
            spacy.load({str(DATA_100 / "crf_tagger" / "pipeline")!r})
            out["legacy"] = "loaded"
        except ImportError as e:
            out["legacy"] = str(e)
        print(json.dumps(out))
        """
    )
    assert not result["torch_imports"] and not result["torch_loaded"]
    assert result["tags"] == [[t.tag_ for t in doc] for doc in nlp.pipe(TEXTS)]
    assert result["first"] == result["tags"][0]
    for got, want in zip(result["marginals"], tagger.marginals(docs)):
        numpy.testing.assert_allclose(numpy.asarray(got, dtype="float32").reshape(want.shape), want, atol=1e-5)
    assert [[tags for tags, _ in doc] for doc in result["nbest"]] == [
        [tags for tags, _ in doc] for doc in tagger.nbest(docs, 2)
    ]
    numpy.testing.assert_allclose(result["uncertainty"], [p for p, _ in tagger.uncertainty(docs)], atol=1e-5)
    assert result["update"].startswith("[E050] Training needs torch") and "spacy-crf[torch]" in result["update"]
    assert result["legacy"].startswith("[E051]") and "to_disk" in result["legacy"]
    assert result["torch_engine"].startswith("[E050] SPACY_CRF_ENGINE=torch needs torch")
    # the corpus job
    assert result["tag_job"] == 0
    shards = sorted((tmp_path / "out").glob("in.jsonl.*.jsonl"))
    tagged = [json.loads(line) for shard in shards for line in shard.read_text().splitlines()]
    assert [record["tags"] for record in tagged] == result["tags"]


def test_resaved_ner_serves_entity_probabilities_without_torch(tmp_path):
    """A crf_ner saved by 1.0.0 (torch.save bytes), re-saved with the
    command E051 names, gives without torch the entities, their posteriors
    (span._.crf_prob) and the candidate spans that it gives with torch."""
    import spacy

    texts = ["Anna ate green ham and eggs in New York on Sunday with Bob and Paris eggs", "eggs", ""]
    nlp = spacy.load(DATA_100 / "crf_ner" / "pipeline")
    nlp.to_disk(tmp_path / "resaved")  # what E051's command runs

    def entities(docs):
        return [
            {
                "ents": [[e.start, e.end, e.label_, e._.crf_prob] for e in doc.ents],
                "candidates": [[s.start, s.end, s.label_] for s in doc.spans.get("candidates", [])],
                "scores": [float(x) for x in doc.spans["candidates"].attrs.get("scores", [])]
                if "candidates" in doc.spans
                else [],
            }
            for doc in docs
        ]

    with_torch = entities(nlp.pipe(texts))
    result = run_without_torch(
        f"""
        import json, spacy
        nlp = spacy.load({str(tmp_path / "resaved")!r})
        docs = list(nlp.pipe({texts!r}))
        print(json.dumps([
            {{
                "ents": [[e.start, e.end, e.label_, e._.crf_prob] for e in doc.ents],
                "candidates": [[s.start, s.end, s.label_] for s in doc.spans.get("candidates", [])],
                "scores": [float(x) for x in doc.spans["candidates"].attrs.get("scores", [])]
                if "candidates" in doc.spans else [],
            }}
            for doc in docs
        ]))
        """
    )
    assert any(doc["ents"] for doc in with_torch) and any(doc["candidates"] for doc in with_torch)
    for got, want in zip(result, with_torch):
        assert [e[:3] for e in got["ents"]] == [e[:3] for e in want["ents"]]
        numpy.testing.assert_allclose([e[3] for e in got["ents"]], [e[3] for e in want["ents"]], atol=1e-5)
        assert got["candidates"] == want["candidates"]
        numpy.testing.assert_allclose(got["scores"], want["scores"], atol=1e-5)
