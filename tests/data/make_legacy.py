"""Write tests/data/legacy-<version>/: small pipelines trained by an old
release of spacy-crf and what they predict, for test_legacy.py.

It uses only the component's public surface, so the saved outputs say what a
pipeline from that release does; the tests check that later code loads the
same files and gives the same predictions, annotations, marginals, n-best
lists, losses and gradients.

0.1.0 (commit f9d19f1), tests/data/legacy-0.1.0/: targets "tag" and "ents".
Run once, at that commit, from the repository root:

    OMP_NUM_THREADS=1 python tests/data/make_legacy.py

0.3.0 (commit 6c1990efc8afa0ca810b0409cafca3123ca01686, "0.3.0: version and
changelog heading"), tests/data/legacy-0.3.0/: targets "tag", "pos+morph",
"tag+pos" and "ents" (see FIXTURES_030 for what each one exercises). Run from
the repository root of a later checkout, with that commit's code beside it
(any venv that has spacy-crf's dependencies; this one had spaCy 3.8.18):

    git worktree add --detach /tmp/crf030 6c1990e
    OMP_NUM_THREADS=1 python tests/data/make_legacy.py 0.3.0 --code /tmp/crf030
    git worktree remove /tmp/crf030

1.0.0, tests/data/legacy-1.0.0/: one fixture per factory, "crf_tagger"
("tag+pos"), "crf_morphologizer" ("pos+morph") and "crf_ner" (see
FIXTURES_100), made the same way with the 1.0 code (RELEASES["1.0.0"]):

    git worktree add --detach /tmp/crf100 <commit>
    OMP_NUM_THREADS=1 python tests/data/make_legacy.py 1.0.0 --code /tmp/crf100

`--code DIR` imports spacy_crf from DIR ahead of any installed copy (an
editable install's import hook is taken out of the way first); the script
checks that DIR holds the release's commit, unchanged, and writes it with the
library versions into each expected.json ("made_with"). The pipelines are
blank "xx" ones (its tokenizer file is half the size of English's) with tiny
networks, trained on the synthetic sentences below. Training is seeded and
runs on one CPU thread: a rerun writes the same files, byte for byte.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import spacy
import torch
from spacy.training import Example
from thinc.api import Adam, fix_random_seed

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

# --- 0.3.0 -----------------------------------------------------------------

OUT_030 = Path(__file__).parent / "legacy-0.3.0"
RELEASES = {"0.3.0": "6c1990efc8afa0ca810b0409cafca3123ca01686"}

# (text, PTB tags, UPOS, FEATS): "_" is no features; the last UPOS of the
# third sentence is "" (unannotated: for "tag+pos" and "pos+morph" the loss
# sums over every label there)
TOKEN_DATA_030 = [
    (
        "I like green eggs",
        ["PRP", "VBP", "JJ", "NNS"],
        ["PRON", "VERB", "ADJ", "NOUN"],
        ["Case=Nom|Number=Sing|Person=1", "Mood=Ind|Tense=Pres", "Degree=Pos", "Number=Plur"],
    ),
    (
        "Eat blue ham and eggs",
        ["VB", "JJ", "NN", "CC", "NNS"],
        ["VERB", "ADJ", "NOUN", "CCONJ", "NOUN"],
        ["Mood=Imp|VerbForm=Fin", "Degree=Pos", "Number=Sing", "_", "Number=Plur"],
    ),
    (
        "They eat green ham on Sunday with blue eggs",
        ["PRP", "VBP", "JJ", "NN", "IN", "NNP", "IN", "JJ", "NNS"],
        ["PRON", "VERB", "ADJ", "NOUN", "ADP", "PROPN", "ADP", "ADJ", ""],
        [
            "Case=Nom|Number=Plur|Person=3",
            "Mood=Ind|Tense=Pres",
            "Degree=Pos",
            "Number=Sing",
            "_",
            "Number=Sing",
            "_",
            "Degree=Pos",
            "Number=Plur",
        ],
    ),
    (
        "She eats ham",
        ["PRP", "VBZ", "NN"],
        ["PRON", "VERB", "NOUN"],
        ["Case=Nom|Gender=Fem|Number=Sing|Person=3", "Mood=Ind|Number=Sing|Person=3|Tense=Pres", "Number=Sing"],
    ),
]
# (text, entities, rejected spans: doc.spans["rejected"] of the reference)
ENT_DATA_030 = [
    ("Anna met Bob in Paris", [(0, 4, "PER"), (9, 12, "PER"), (16, 21, "LOC")], [(16, 21, "PER")]),
    ("Bob flew to New York", [(0, 3, "PER"), (12, 20, "LOC")], [(12, 15, "LOC")]),
    ("They met in Paris on Sunday", [(12, 17, "LOC")], [(21, 27, "LOC"), (0, 4, "PER")]),
    ("Anna and Bob flew to York", [(0, 4, "PER"), (9, 12, "PER"), (21, 25, "LOC")], []),
]
TEXTS_030 = TEXTS + ["Bob met Anna in New York", "She eats green eggs and ham"]


def _embed(version, **settings):
    return {
        "@architectures": f"spacy_crf.HashCharEmbed.{version}",
        "width": 16,
        "attrs": ["NORM", "PREFIX", "SUFFIX"],
        "rows": [48, 24, 24],
        "nM": 2,
        "nC": 4,
        "include_static_vectors": False,
        **settings,
    }


def _bilstm_crf(version, tok2vec, **settings):
    return {
        "@architectures": f"spacy_crf.BiLSTMCRF.{version}",
        "hidden_width": 8,
        "depth": 1,
        "dropout": 0.0,
        "crf": True,
        "chunk_size": 6,
        "input_dropout": 0.0,
        "tok2vec": tok2vec,
        **settings,
    }


# What 0.3.0 offered and each fixture exercises (0.3.0 has no
# BiLSTMCRF.v3 and no composed emissions; its new architecture is .v2 with
# transitions "full" or "factored"):
# - "tag": a known-word list (HashCharEmbed.v2, min_count 1), BiLSTMCRF.v2
#   with full transitions, chunk_size 6 and window 10, store_confidence and a
#   temperature of 1.5 saved in cfg.
# - "pos+morph": bundles with factored transitions (BiLSTMCRF.v2) on
#   HashCharEmbed.v4 with the character CNN (CharCNN.v1), a known-word list
#   and an unannotated token in training.
# - "tag+pos": (tag, UPOS) pairs with factored transitions, two BiLSTM
#   layers, HashCharEmbed.v3 without a known-word list, an unannotated token.
# - "ents": BILUO constraints, BiLSTMCRF.v1 on HashCharEmbed.v1,
#   store_entity_probs, store_confidence, candidates_key, ents_threshold,
#   incorrect_spans_key (rejected spans in the loss) and a temperature of 0.75.
FIXTURES_030 = {
    "tag": {
        "config": {
            "model": _bilstm_crf("v2", _embed("v2", min_count=1, word_dropout=0.0), transitions="full"),
            "target": "tag",
            "window": 10,
            "store_confidence": True,
        },
        "temperature": 1.5,
    },
    "pos+morph": {
        "config": {
            "model": _bilstm_crf(
                "v2",
                _embed(
                    "v4",
                    min_count=1,
                    word_dropout=0.0,
                    word_encoder={
                        "@architectures": "spacy_crf.CharCNN.v1",
                        "width": 8,
                        "nM": 4,
                        "window": 1,
                        "nP": 2,
                        "max_bytes": 10,
                    },
                ),
                transitions="factored",
            ),
            "target": "pos+morph",
            "window": 10,
            "store_confidence": True,
        },
    },
    "tag+pos": {
        "config": {
            "model": _bilstm_crf("v2", _embed("v3", min_count=0, word_dropout=0.0), depth=2, transitions="factored"),
            "target": "tag+pos",
            "window": 10,
        },
    },
    "ents": {
        "config": {
            "model": _bilstm_crf("v1", _embed("v1")),
            "target": "ents",
            "window": 10,
            "constraints": "auto",
            "store_confidence": True,
            "store_entity_probs": True,
            "ents_threshold": 0.6,
            "candidates_key": "candidates",
            "candidates_threshold": 0.1,
            "incorrect_spans_key": "rejected",
        },
        "temperature": 0.75,
    },
}


# --- 1.0.0 -----------------------------------------------------------------

OUT_100 = Path(__file__).parent / "legacy-1.0.0"
RELEASES["1.0.0"] = "23d0fdd89019089a08244a1de89270a80631bade"  # the code that wrote legacy-1.0.0/


def _embed_v5(**settings):
    return {
        **_embed("v5"),
        "min_count": 1,
        "word_dropout": 0.0,
        "sum_byte_gradients": True,
        "word_encoder": None,
        **settings,
    }


def _bilstm_crf_v4(tok2vec, **settings):
    return _bilstm_crf("v4", tok2vec, **{"transitions": "full", "emissions": "full", **settings})


# What each 1.0 factory's fixture exercises (the newest architectures):
# - "crf_tagger": target "tag+pos" with composed emissions and factored
#   transitions, store_confidence, a temperature of 1.5.
# - "crf_morphologizer": target "pos+morph" with composed emissions and
#   factored transitions on HashCharEmbed.v5 with the character CNN
#   (CharCNN.v2), spaCy's CharacterEmbed gradient (sum_byte_gradients false).
# - "crf_ner": scheme IOBES, store_entity_probs, store_confidence,
#   candidates_key, threshold, incorrect_spans_key and a temperature of 0.75.
FIXTURES_100 = {
    "crf_tagger": {
        "target": "tag+pos",
        "config": {
            "model": _bilstm_crf_v4(_embed_v5(), transitions="factored", emissions="composed"),
            "target": "tag+pos",
            "window": 10,
            "store_confidence": True,
        },
        "temperature": 1.5,
    },
    "crf_morphologizer": {
        "target": "pos+morph",
        "config": {
            "model": _bilstm_crf_v4(
                _embed_v5(
                    sum_byte_gradients=False,
                    word_encoder={
                        "@architectures": "spacy_crf.CharCNN.v2",
                        "width": 8,
                        "nM": 4,
                        "window": 1,
                        "nP": 2,
                        "max_bytes": 10,
                    },
                ),
                transitions="factored",
                emissions="composed",
            ),
            "target": "pos+morph",
            "window": 10,
        },
    },
    "crf_ner": {
        "target": "ents",
        "config": {
            "model": _bilstm_crf_v4(_embed_v5()),
            "scheme": "IOBES",
            "window": 10,
            "store_confidence": True,
            "store_entity_probs": True,
            "threshold": 0.6,
            "candidates_key": "candidates",
            "candidates_threshold": 0.1,
            "incorrect_spans_key": "rejected",
        },
        "temperature": 0.75,
    },
}


def examples(nlp, target, version="0.1.0"):
    """The training examples of a fixture (also its loss and gradients)."""
    if version == "0.1.0":
        if target == "tag":
            return [Example.from_dict(nlp.make_doc(t), {"tags": tags}) for t, tags in TAG_DATA]
        return [Example.from_dict(nlp.make_doc(t), {"entities": ents}) for t, ents in ENT_DATA]
    if target == "ents":
        return [
            Example.from_dict(nlp.make_doc(t), {"entities": ents, "spans": {"rejected": rejected}})
            for t, ents, rejected in ENT_DATA_030
        ]
    fields = {"tag": ("tags",), "tag+pos": ("tags", "pos"), "pos+morph": ("pos", "morphs")}[target]
    return [
        Example.from_dict(nlp.make_doc(t), {f: v for f, v in zip(("tags", "pos", "morphs"), values) if f in fields})
        for t, *values in TOKEN_DATA_030
    ]


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


def gradients(nlp, target, version="0.1.0", component="crf_tagger"):
    """The loss of one update without an optimizer, and every gradient."""
    tagger = nlp.get_pipe(component)
    losses = {}
    tagger.update(examples(nlp, target, version), sgd=None, losses=losses)
    grads = {}
    for node in tagger.model.walk():
        for name in node.param_names:
            if node.has_grad(name):
                grads[f"thinc.{node.name}.{name}.{len(grads)}"] = numpy.asarray(node.get_grad(name))
        for shim in node.shims:
            for key, param in shim._model.named_parameters():
                if param.grad is not None:
                    grads[f"torch.{key}"] = param.grad.numpy().copy()
    return losses[component], grads


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


def annotations(doc, candidates_key=None):
    """What a 0.3.0 pipeline writes to a doc, as JSON (annotations of the
    targets the component does not write are included: they must stay unset)."""
    out = {
        "tags": [t.tag_ for t in doc],
        "pos": [t.pos_ for t in doc],
        "morph": [str(t.morph) for t in doc],
        "ents": [[e.start, e.end, e.label_] for e in doc.ents],
        "ent_probs": [e._.crf_prob for e in doc.ents],
        "confidence": [t._.crf_confidence for t in doc],
    }
    if candidates_key is not None:
        group = doc.spans[candidates_key]
        out["candidates"] = [[s.start, s.end, s.label_] for s in group]
        out["candidate_scores"] = numpy.asarray(group.attrs["scores"]).tolist()
    return out


def build_030(target, fixture=None, factory="crf_tagger"):
    """A fixture's pipeline, trained: 0.3.0's (by target) or, given the
    fixture, one of a later release (component named after its factory)."""
    fixture = fixture or FIXTURES_030[target]
    fix_random_seed(0)
    nlp = spacy.blank("xx")  # a small tokenizer file
    nlp.add_pipe(factory, config=fixture["config"])
    egs = examples(nlp, target, "0.3.0")
    nlp.initialize(get_examples=lambda: egs)
    optimizer = Adam(0.01)
    for _ in range(40):
        nlp.update(egs, sgd=optimizer)
    if "temperature" in fixture:
        nlp.get_pipe(factory).temperature = fixture["temperature"]
    return nlp


def made_with():
    """The code and library versions that wrote a fixture."""
    import thinc

    import spacy_crf

    where = Path(spacy_crf.__file__).resolve().parent
    git = ["git", "-C", str(where)]
    return {
        "spacy_crf": spacy_crf.__version__,
        "commit": subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip(),
        "code_changed": bool(
            subprocess.run(git + ["status", "--porcelain", "--", "."], capture_output=True, text=True).stdout.strip()
        ),
        "spacy": spacy.__version__,
        "thinc": thinc.__version__,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
    }


def main_030(version="0.3.0"):
    made = made_with()
    if version == "0.3.0" and (made["commit"] != RELEASES["0.3.0"] or made["code_changed"]):
        sys.exit(f"spacy_crf's code is not the 0.3.0 release's ({RELEASES['0.3.0']}): {made}")
    if version == "1.0.0" and made["code_changed"]:
        sys.exit(f"spacy_crf's code has uncommitted changes: {made}")
    fixtures = FIXTURES_030 if version == "0.3.0" else FIXTURES_100
    for name, fixture in fixtures.items():
        target = name if version == "0.3.0" else fixture["target"]
        factory = "crf_tagger" if version == "0.3.0" else name
        nlp = build_030(target, fixture, factory)
        path = (OUT_030 if version == "0.3.0" else OUT_100) / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        nlp.to_disk(path / "pipeline")
        tagger = nlp.get_pipe(factory)
        key = tagger.cfg.get("candidates_key")
        docs = [nlp.make_doc(t) for t in TEXTS_030]
        prediction = tagger.predict(docs)
        marginals = tagger.marginals(docs)
        nbest = tagger.nbest(docs, 3)
        uncertainty = tagger.uncertainty(docs)
        annotated = [annotations(doc, key) for doc in nlp.pipe(TEXTS_030)]
        loss, grads = gradients(nlp, target, "0.3.0", factory)
        arrays = {f"ids.{i}": a for i, a in enumerate(prediction.ids)}
        arrays.update({f"marginals.{i}": a for i, a in enumerate(marginals)})
        arrays.update({f"entropy.{i}": entropy for i, (_, entropy) in enumerate(uncertainty)})
        if prediction.confidences is not None:
            arrays.update({f"confidences.{i}": a for i, a in enumerate(prediction.confidences)})
        if prediction.entity_probs is not None:
            arrays.update({f"entity_probs.{i}": a for i, a in enumerate(prediction.entity_probs)})
        arrays.update({f"grad.{k}": v for k, v in grads.items()})
        numpy.savez_compressed(path / "expected.npz", **arrays)
        expected = {
            "made_with": made,
            "texts": TEXTS_030,
            "labels": list(tagger.labels),
            "temperature": tagger.temperature,
            "entities": None
            if prediction.entities is None
            else [[list(e) for e in doc] for doc in prediction.entities],
            "candidates": None
            if prediction.candidates is None
            else [[[s, e, label, float(p)] for s, e, label, p in doc] for doc in prediction.candidates],
            "annotated": annotated,
            "nbest": nbest,
            "best_path_prob": [p for p, _ in uncertainty],
            "loss": loss,
        }
        (path / "expected.json").write_text(json.dumps(expected, indent=1))
        print(target, "labels", len(tagger.labels), "loss", loss, "grads", len(grads))


def _import_from(code):
    """Import spacy_crf from the directory `code`, not from an installed copy."""
    code = str(Path(code).resolve())
    # an editable install's finder answers before sys.path: take it out
    sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
    sys.path.insert(0, code)
    import spacy_crf

    where = Path(spacy_crf.__file__).resolve()
    print("spacy_crf", spacy_crf.__version__, "from", where)
    if Path(code) not in where.parents:
        sys.exit(f"spacy_crf was imported from {where}, not from {code}")
    return spacy_crf


if __name__ == "__main__":
    torch.set_num_threads(1)
    args = sys.argv[1:]
    version = args[0] if args and not args[0].startswith("-") else "0.1.0"
    code = args[args.index("--code") + 1] if "--code" in args else None
    if code is not None:
        _import_from(code)
    if version == "0.1.0":
        main()
    elif version in ("0.3.0", "1.0.0"):
        if code is None:
            sys.exit(f"give the {version} release's code: --code DIR (see the top of this file)")
        import spacy_crf

        if spacy_crf.__version__ != version:
            sys.exit(f"spacy_crf is {spacy_crf.__version__}, not {version}")
        main_030(version)
    else:
        sys.exit(f"no fixtures for version {version}")
