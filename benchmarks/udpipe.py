"""UDPipe 1's tagger, trained on the same UD split as crf_tagger and scored on the same dev words.

    python -m benchmarks.udpipe ../shared/data/ud-turkish-imst/tr_imst-ud-train.conllu \\
        ../shared/data/ud-turkish-imst/tr_imst-ud-dev.conllu [--tagger-options "guesser_suffix_rules=12"] \\
        [--name tr_imst] --output metrics/peers/udpipe_tr_imst.json

Needs the `udpipe` extra (`pip install -e ".[udpipe]"`, the ufal.udpipe
bindings of UDPipe 1); downloads nothing. The published UDPipe 1.2 figures that
issue-style anchors quote were measured on the UD test sets, which are not
used here; this trains the same tagger (MorphoDiTa's averaged perceptron with
its suffix guesser, no word embeddings) on the train file and measures it on
the dev file, as the project measures crf_tagger and spaCy's morphologizer.

UDPipe's trainer runs with the tokenizer and the parser off and the given
tagger options (UDPipe's defaults unless `--tagger-options`), the dev file as
its heldout data: it keeps the training iteration that scores best there, as
`spacy train` keeps model-best by its dev score. The dev sentences are then
tagged from their gold syntactic words (forms only: multiword-token ranges
and empty nodes are not words) on one thread, and each word is scored as
spaCy's scorer scores crf_tagger: UPOS, FEATS (the whole feature string),
UPOS+FEATS, and AllTags (UPOS, XPOS and FEATS). Words/s: the tagging of the
dev words, after the model is loaded.
"""

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Dict, List

from .common import environment
from .peers import PeerErrors


def import_udpipe():
    """ufal.udpipe, or E207 when it is not installed."""
    try:
        import ufal.udpipe as udpipe
    except ImportError as error:
        raise ImportError(PeerErrors.E207) from error
    return udpipe


def read_sentences(path: Path) -> List:
    """The sentences of a CoNLL-U file as ufal.udpipe Sentences."""
    udpipe = import_udpipe()

    reader = udpipe.InputFormat.newConlluInputFormat()
    reader.setText(path.read_text(encoding="utf-8"))
    sentences, sentence, error = [], udpipe.Sentence(), udpipe.ProcessingError()
    while reader.nextSentence(sentence, error):
        sentences.append(sentence)
        sentence = udpipe.Sentence()
    if error.occurred():
        raise ValueError(PeerErrors.E208.format(path=path, message=error.message))
    return sentences


def train(train_sentences: List, dev_sentences: List, tagger_options: str) -> bytes:
    """A UDPipe model with only a tagger, trained with the dev sentences as heldout data."""
    udpipe = import_udpipe()

    train_set, heldout = udpipe.Sentences(), udpipe.Sentences()
    for sentence in train_sentences:
        train_set.push_back(sentence)
    for sentence in dev_sentences:
        heldout.push_back(sentence)
    error = udpipe.ProcessingError()
    model = udpipe.Trainer.train("morphodita_parsito", train_set, heldout, "none", tagger_options, "none", error)
    if error.occurred():
        raise ValueError(PeerErrors.E209.format(message=error.message))
    return model.encode("latin-1") if isinstance(model, str) else model


def canonical(feats: str) -> str:
    """A FEATS string in the order spaCy keys it (features and their values
    sorted), so that two spellings of one set compare equal as in spaCy's scorer."""
    if feats in ("", "_"):
        return "_"
    pairs = (feature.partition("=") for feature in feats.split("|"))
    return "|".join(sorted(f"{name}{eq}{','.join(sorted(value.split(',')))}" for name, eq, value in pairs))


def score(model, gold_sentences: List) -> Dict[str, float]:
    """Tag the gold words of each sentence; accuracies (percent) and words/s."""
    udpipe = import_udpipe()

    counts = {"upos": 0, "ufeats": 0, "upos_feats": 0, "alltags": 0}
    words = 0
    seconds = 0.0
    for gold in gold_sentences:
        gold_words = list(gold.words)[1:]  # words[0] is the root
        sentence = udpipe.Sentence()
        for word in gold_words:
            sentence.addWord(word.form)
        start = time.perf_counter()
        model.tag(sentence, udpipe.Model.DEFAULT)
        seconds += time.perf_counter() - start
        for g, p in zip(gold_words, list(sentence.words)[1:]):
            upos, feats = g.upostag == p.upostag, canonical(g.feats) == canonical(p.feats)
            counts["upos"] += upos
            counts["ufeats"] += feats
            counts["upos_feats"] += upos and feats
            counts["alltags"] += upos and feats and g.xpostag == p.xpostag
        words += len(gold_words)
    result = {name: round(100 * count / max(words, 1), 2) for name, count in counts.items()}
    result.update(words=words, words_per_second=round(words / seconds) if seconds else 0)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train", type=Path)
    parser.add_argument("dev", type=Path)
    parser.add_argument("--tagger-options", default="", help="UDPipe tagger options; empty: its defaults")
    parser.add_argument("--name", default=None, help="the treebank's name in the table (default: from the file)")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    udpipe = import_udpipe()
    train_sentences, dev_sentences = read_sentences(args.train), read_sentences(args.dev)
    start = time.perf_counter()
    model_bytes = train(train_sentences, dev_sentences, args.tagger_options)
    train_seconds = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tagger.udpipe"
        path.write_bytes(model_bytes)
        model = udpipe.Model.load(str(path))
    result = {
        "system": f"UDPipe {udpipe.Version.current().major}.{udpipe.Version.current().minor}."
        f"{udpipe.Version.current().patch} tagger",
        "treebank": args.name or args.train.name.split("-ud-")[0],
        "tagger_options": args.tagger_options or "UDPipe's defaults",
        "train_words": sum(len(s.words) - 1 for s in train_sentences),
        "train_minutes": round(train_seconds / 60, 1),
        **score(model, dev_sentences),
        "environment": environment(),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "environment"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
