"""Write tests/data/legacy-0.1.0/: two small pipelines trained by spacy-crf
0.1.0 (commit f9d19f1) and what they predict, for test_legacy.py.

This file was run once, at that commit, from the repository root:

    OMP_NUM_THREADS=1 python tests/data/make_legacy.py

It uses only the component's public surface, so the saved outputs say what a
pipeline from that release does; the tests check that later code loads the
same files and gives the same predictions, marginals, n-best lists, losses
and gradients.
"""
import json
from pathlib import Path

import numpy
import spacy
import torch
from spacy.training import Example
from thinc.api import fix_random_seed

OUT = Path(__file__).parent / "legacy-0.1.0"

EMBED = {
    "@architectures": "spacy_crf.HashCharEmbed.v2",
    "width": 16,
    "attrs": ["NORM", "PREFIX", "SUFFIX", "SHAPE"],
    "rows": [200, 100, 100, 50],
    "nM": 8,
    "nC": 4,
    "include_static_vectors": False,
    "min_count": 1,
    "word_dropout": 0.0,
}
MODEL = {
    "@architectures": "spacy_crf.BiLSTMCRF.v1",
    "hidden_width": 12,
    "depth": 1,
    "dropout": 0.0,
    "crf": True,
    "chunk_size": 6,
    "tok2vec": EMBED,
}
TAG_DATA = [
    ("I like green eggs", ["N", "V", "J", "N"]),
    ("Eat blue ham and eggs", ["V", "J", "N", "C", "N"]),
    ("They eat green ham on Sunday with blue eggs", ["N", "V", "J", "N", "P", "N", "P", "J", "N"]),
]
ENT_DATA = [
    ("Anna met Bob in Paris", [(0, 4, "PER"), (9, 12, "PER"), (16, 21, "LOC")]),
    ("Bob flew to New York", [(0, 3, "PER"), (12, 20, "LOC")]),
    ("They met in Paris on Sunday", [(12, 17, "LOC")]),
]
# chunked (> 6 tokens), windowed (> 10 tokens), one token, empty
TEXTS = [
    "I like blue eggs",
    "Anna ate green ham and eggs in New York on Sunday with Bob and Paris eggs",
    "eggs",
    "",
    "They eat blue ham on Sunday with green eggs",
]


def examples(nlp, target):
    if target == "tag":
        return [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TAG_DATA]
    return [Example.from_dict(nlp.make_doc(t), {"entities": ents}) for t, ents in ENT_DATA]


def build(target):
    fix_random_seed(0)
    nlp = spacy.blank("en")
    config = {"model": MODEL, "target": "ents" if target == "ents" else "tag", "window": 10}
    nlp.add_pipe("crf_tagger", config=config)
    egs = examples(nlp, target)
    optimizer = nlp.initialize(get_examples=lambda: egs)
    for _ in range(30):
        nlp.update(egs, sgd=optimizer)
    return nlp


def gradients(nlp, target):
    """The loss of one update without an optimizer, and every gradient."""
    tagger = nlp.get_pipe("crf_tagger")
    losses = {}
    tagger.update(examples(nlp, target), sgd=None, losses=losses)
    grads = {}
    for node in tagger.model.walk():
        for name in node.param_names:
            if node.has_grad(name):
                grads[f"thinc.{node.name}.{name}.{len(grads)}"] = numpy.asarray(node.get_grad(name))
        for shim in node.shims:
            for key, param in shim._model.named_parameters():
                if param.grad is not None:
                    grads[f"torch.{key}"] = param.grad.numpy().copy()
    return losses["crf_tagger"], grads


def main():
    for target in ("tag", "ents"):
        nlp = build(target)
        path = OUT / target
        nlp.to_disk(path / "pipeline")
        tagger = nlp.get_pipe("crf_tagger")
        docs = [nlp.make_doc(t) for t in TEXTS]
        ids = tagger.predict(docs)
        marginals = tagger.marginals(docs)
        nbest = tagger.nbest(docs, 3)
        annotated = [
            {"tags": [t.tag_ for t in doc], "ents": [(e.start, e.end, e.label_) for e in doc.ents]}
            for doc in nlp.pipe(TEXTS)
        ]
        loss, grads = gradients(nlp, target)
        arrays = {f"ids.{i}": a for i, a in enumerate(ids)}
        arrays.update({f"marginals.{i}": a for i, a in enumerate(marginals)})
        arrays.update({f"grad.{k}": v for k, v in grads.items()})
        numpy.savez_compressed(path / "expected.npz", **arrays)
        srsly_json = {"texts": TEXTS, "annotated": annotated, "nbest": nbest, "loss": loss}
        (path / "expected.json").write_text(json.dumps(srsly_json, indent=1))
        print(target, "loss", loss, "grads", len(grads))


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
