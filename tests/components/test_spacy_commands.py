"""spaCy's commands that key on factory names, for crf components:
`python -m spacy_crf debug-data` (spaCy's debug data with its tag, morph and
entity checks) and `python -m spacy_crf displacy` (evaluate's entities.html)."""

import spacy
from spacy.tokens import Doc, DocBin

from spacy_crf.cli import main
from spacy_crf.cli.spacy_commands import spacy_factory, with_spacys_components

from ..helpers import CONFIGS, make_nlp, train, write_docbin, write_morph_docbin

NER_WORDS = [
    (["Anna", "lives", "in", "Rome"], ["B-PER", "O", "O", "B-LOC"]),
    (["Rome", "loves", "Anna", "."], ["B-LOC", "O", "B-PER", "O"]),
]


def write_ner_docbin(path):
    vocab = spacy.blank("en").vocab
    DocBin(docs=[Doc(vocab, words=words, ents=ents) for words, ents in NER_WORDS * 3]).to_disk(path)


def test_each_crf_factory_maps_to_spacys_component_for_the_same_annotation():
    assert spacy_factory({"factory": "crf_ner"}) == "ner"
    assert spacy_factory({"factory": "crf_morphologizer"}) == "morphologizer"
    assert spacy_factory({"factory": "crf_tagger", "target": "tag"}) == "tagger"
    assert spacy_factory({"factory": "crf_tagger", "target": "pos"}) == "morphologizer"
    assert spacy_factory({"factory": "crf_tagger", "target": "ents"}) == "ner"  # 0.x
    assert spacy_factory({"factory": "tok2vec"}) is None
    config = spacy.util.load_config(CONFIGS / "ner_cpu.cfg", interpolate=False)
    swapped, names = with_spacys_components(config)
    assert names == {"crf_ner": "ner"} and dict(swapped["components"]["crf_ner"]) == {"factory": "ner"}
    assert config["components"]["crf_ner"]["factory"] == "crf_ner"  # the original is unchanged


def test_debug_data_runs_spacys_tag_morph_and_entity_checks(tmp_path, capsys):
    write_docbin(tmp_path / "tags.spacy")
    write_morph_docbin(tmp_path / "morph.spacy")
    write_ner_docbin(tmp_path / "ents.spacy")
    for config, data, section in [
        ("cpu.cfg", "tags.spacy", "Part-of-speech Tagging"),
        ("cpu_morph.cfg", "morph.spacy", "Morphologizer (POS+Morph)"),
        ("ner_cpu.cfg", "ents.spacy", "Named Entity Recognition"),
    ]:
        path = str(tmp_path / data)
        try:
            main(["debug-data", str(CONFIGS / config), "--paths.train", path, "--paths.dev", path])
        except SystemExit as e:  # spaCy's verdict: 1 for a tiny corpus ("Low number of examples")
            assert e.code == 1
        out = capsys.readouterr().out
        assert section in out, out
        assert "as spaCy's" in out


def test_displacy_writes_the_entities_of_a_crf_ner_pipeline(tmp_path):
    spacy.util.fix_random_seed(0)
    nlp = make_nlp(factory="crf_ner")
    from spacy.training import Example

    examples = [Example(Doc(nlp.vocab, words=w), Doc(nlp.vocab, words=w, ents=e)) for w, e in NER_WORDS]
    train(nlp, examples, steps=40)
    nlp.to_disk(tmp_path / "model")
    write_ner_docbin(tmp_path / "dev.spacy")
    assert (
        main(["displacy", str(tmp_path / "model"), str(tmp_path / "dev.spacy"), str(tmp_path / "html"), "--limit", "2"])
        == 0
    )
    html = (tmp_path / "html" / "entities.html").read_text()
    assert "PER" in html and "LOC" in html and "Anna" in html
