"""Flair's SequenceTagger, the BiLSTM-CRF most users would pick instead, measured as crf_tagger is.

    python -m benchmarks.peers --train ../shared/data/ud-english-ewt/en_ewt-ud-train.conllu \\
        --dev ../shared/data/ud-english-ewt/en_ewt-ud-dev.conllu --column xpos \\
        [--epochs 10] [--max-minutes M] [--threads 1] [--repeats 5] [--batch-size 256] \\
        [--spacy-model crf_tagger=training/cpu/model-best ...] \\
        [--workdir training/peers/flair] --output metrics/speed/flair.json

Needs the `peers` extra (`pip install -e ".[peers]"`); downloads nothing. The
script reads the CoNLL-U files itself (comment lines, multiword-token ranges
and empty nodes skipped), writes one (token, tag) column file per split into
`WORKDIR/data` and loads them with Flair's ColumnCorpus: train and dev only,
no test split (none is sampled from train either).

The model is Lample et al.'s tagger, the closest peer of configs/cpu.cfg and
built as Flair's tutorials build it: one-hot word embeddings of the words seen
at least twice in train (`--min-freq`, our unknown-word threshold; the others
share <unk>), `--word-dim` wide (Lample's 100), stacked with Flair's character
BiLSTM (25 + 25, Flair's and Lample's sizes; its character dictionary is built
from train, as Flair's default one would be downloaded); a one-layer BiLSTM of
256 per direction and a CRF, with Flair's default dropouts (word dropout 0.05,
locked dropout 0.5, no plain dropout) and embedding reprojection. Flair's own
ModelTrainer trains it for `--epochs` epochs with its defaults: SGD, learning
rate 0.1, mini-batches of 32, shuffled, gradients clipped at 5, the learning
rate halved when the dev score has not improved for 3 epochs, and the best
epoch on dev kept (best-model.pt, as spaCy keeps model-best).

A trainer plugin stamps each epoch's dev evaluation with the wall time since
the training step started (importing Flair, loading the corpus and building the
model included: what a user waits for) and times each epoch's training loop
alone (the dev evaluation and model saving excluded) for the training words/s
(train words x epochs done / that time). The dev score is Flair's micro-F1,
which for one tag per token and no "O" tag is exactly token accuracy: the
plugin checks it against Flair's own (rounded) accuracy every epoch and keeps
that too ("flair_dev_accuracy"). `--max-minutes` stops
after the epoch in which the limit passed. Then, on one thread, the trained
tagger's inference rate: `tagger.predict` on fresh Sentences of the dev
words (gold tokens) in mini-batches of `--batch-size` (nlp.pipe's 256 of
configs/cpu.cfg), one warm-up pass on 50 sentences, then `--repeats` timed
passes, median (as benchmarks.common.words_per_second times nlp.pipe), and
the tagger's dev accuracy, computed here from those predictions.

The JSON has the keys of a run of benchmarks.time_to_accuracy ("points" of
seconds, step = epoch and score = dev accuracy in percent, "seconds", "best",
"final", "settings_text"), so `time_to_accuracy --peer flair=JSON` plots it
beside crf_tagger, plus "train_words_per_second", "pipe_words_per_second",
"inference_runs", "dev_accuracy", "epochs_done" and "stopped_early".
`--spacy-model NAME=PATH[,SECTION.KEY=VALUE...]` (repeatable) times trained
spaCy pipelines (e.g. crf_tagger's configs/cpu.cfg model, and the same with
`components.crf_tagger.quantize=int8`) in turn with Flair's predict, one doc per
sentence, and scores their dev accuracy: "side_by_side". `--retime` trains
nothing: it times the saved best model again (with the `--spacy-model`
pipelines, e.g. after a change to crf_tagger) and replaces the inference
figures in the `--output` JSON, whose training figures stay ("retimed": true).
"""

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from spacy_crf.errors import ErrorsWithCodes

from .common import (
    add_allocator_argument,
    environment,
    parse_spec,
    use_allocator,
    write_json,
)

# CoNLL-U's ten columns
COLUMNS = ["id", "form", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc"]
# the label type of the tags in Flair's corpus
TAG_TYPE = "tag"

Sentences = List[Tuple[List[str], List[str]]]


class PeerErrors(metaclass=ErrorsWithCodes):
    """Coded errors of the peer benchmarks (E201 upwards: spacy_crf's own are
    E001 upwards, corpus tagging's E101 upwards)."""

    E201 = (
        'benchmarks.peers needs Flair: pip install -e ".[peers]" (from the '
        'repository root; or pip install "spacy-crf[peers]").'
    )
    E202 = (
        '{path} tags a token "O" in its {column} column, which Flair\'s column '
        "reader drops as no tag: its token accuracy would be wrong."
    )
    E203 = "{path} holds no sentence with a {column} column."
    E204 = (
        "Flair's dev micro-F1 ({f1}) is not its token accuracy ({accuracy}) in "
        "epoch {epoch}: the data are not one tag per token."
    )
    E205 = (
        "Flair read {flair} words of {split} where the CoNLL-U has {ours}: it drops "
        "empty tokens, and every word must be tagged once."
    )
    E206 = (
        "The saved Flair tagger scores {now} on dev where the run that trained it "
        "scored {then}: --retime needs the same data and settings as that run."
    )
    E207 = (
        'benchmarks.udpipe needs UDPipe 1\'s bindings: pip install -e ".[udpipe]" '
        '(from the repository root; or pip install "spacy-crf[udpipe]").'
    )
    E208 = "UDPipe could not read {path}: {message}"
    E209 = "UDPipe could not train its tagger: {message}"


def read_conllu(path: Path, column: str) -> Sentences:
    """The (words, tags) of each sentence of a CoNLL-U file: comment lines,
    multiword-token ranges (1-2) and empty nodes (1.1) skipped.

    path (Path): the CoNLL-U file.
    column (str): the tag column, one of COLUMNS (e.g. "xpos").
    RETURNS (List[Tuple[List[str], List[str]]]): the sentences.
    """
    index = COLUMNS.index(column)
    sentences: Sentences = []
    words: List[str] = []
    tags: List[str] = []
    with path.open(encoding="utf-8") as file:
        for line in file:
            line = line.rstrip("\n")
            if not line.strip():
                if words:
                    sentences.append((words, tags))
                words, tags = [], []
                continue
            if line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 10 or not fields[0].isdigit():  # 1-2 ranges, 1.1 empty nodes
                continue
            if fields[index] == "O":
                raise ValueError(PeerErrors.E202.format(path=path, column=column))
            words.append(fields[1])
            tags.append(fields[index])
    if words:
        sentences.append((words, tags))
    if not sentences:
        raise ValueError(PeerErrors.E203.format(path=path, column=column))
    return sentences


def write_columns(sentences: Sentences, path: Path) -> None:
    """Write sentences as a Flair column file: "token<TAB>tag" lines, a blank line after each sentence."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as file:
        for words, tags in sentences:
            file.writelines(f"{word}\t{tag}\n" for word, tag in zip(words, tags))
            file.write("\n")


def import_flair():
    """Flair, or E201 when it is not installed."""
    try:
        import flair
        import flair.datasets  # noqa: F401
        import flair.embeddings  # noqa: F401
        import flair.models  # noqa: F401
        import flair.trainers  # noqa: F401
    except ImportError as err:
        raise ImportError(PeerErrors.E201) from err
    return flair


def epoch_clock(start: float, max_seconds: Optional[float]):
    """A Flair trainer plugin that records each epoch's dev score against the
    wall time since `start` and times the epochs' training loops; after the
    epoch in which `max_seconds` passed, it stops the training."""
    from flair.trainers.plugins import TrainerPlugin, TrainingInterrupt

    class EpochClock(TrainerPlugin):
        def __init__(self) -> None:
            super().__init__()
            self.points: List[Dict] = []
            self.accuracies: List[Optional[float]] = []  # Flair's own, in percent: the check
            self.train_seconds = 0.0
            self.epochs_done = 0
            self.out_of_time = False
            self._epoch_start = 0.0
            self._accuracy: Optional[float] = None

        @TrainerPlugin.hook
        def before_training_epoch(self, epoch, **kw):
            if self.out_of_time:
                raise TrainingInterrupt(f"--max-minutes passed: stopping before epoch {epoch}")
            self._epoch_start = time.perf_counter()

        @TrainerPlugin.hook
        def after_training_epoch(self, epoch, **kw):
            self.train_seconds += time.perf_counter() - self._epoch_start
            self.epochs_done = epoch

        @TrainerPlugin.hook
        def metric_recorded(self, record):
            if tuple(record.name) == ("dev", "accuracy"):
                self._accuracy = float(record.value)

        @TrainerPlugin.hook
        def after_evaluation(self, epoch, validation_scores, **kw):
            seconds = time.perf_counter() - start
            f1 = float(validation_scores[0])
            # Flair rounds its accuracy to 4 places; micro-F1 is exact
            if self._accuracy is not None and abs(f1 - self._accuracy) > 5.01e-5:
                raise ValueError(PeerErrors.E204.format(f1=f1, accuracy=self._accuracy, epoch=epoch))
            self.points.append({"seconds": round(seconds, 2), "step": epoch, "score": round(f1 * 100, 4)})
            self.accuracies.append(None if self._accuracy is None else round(self._accuracy * 100, 2))
            self._accuracy = None
            print(f"epoch {epoch}: dev accuracy {f1 * 100:.2f} at {seconds:.1f} s", flush=True)
            if max_seconds is not None and seconds >= max_seconds:
                self.out_of_time = True

    return EpochClock()


def fresh_sentences(sentences: Sentences) -> list:
    """New Flair Sentences of the words (gold tokens), without tags."""
    from flair.data import Sentence

    return [Sentence(list(words)) for words, _ in sentences]


def predict_rate(tagger, sentences: Sentences, *, repeats: int, batch_size: int) -> Tuple[float, List[float], int]:
    """tagger.predict words/s on fresh copies of the sentences, after a
    warm-up on 50 of them (benchmarks.common.words_per_second's protocol).

    RETURNS (Tuple[float, List[float], int]): the median rate, each pass's
        rate, and the number of words.
    """
    n_words = sum(len(words) for words, _ in sentences)
    tagger.predict(fresh_sentences(sentences[:50]), mini_batch_size=batch_size)  # warm-up
    rates = []
    for _ in range(repeats):
        fresh = fresh_sentences(sentences)
        begin = time.perf_counter()
        tagger.predict(fresh, mini_batch_size=batch_size)
        rates.append(n_words / (time.perf_counter() - begin))
    return statistics.median(rates), rates, n_words


def accuracy(tagger, sentences: Sentences, batch_size: int) -> float:
    """The tagger's token accuracy on the sentences' gold tags, in percent."""
    predicted = fresh_sentences(sentences)
    tagger.predict(predicted, mini_batch_size=batch_size, label_name="predicted")
    right = total = 0
    for sentence, (_, tags) in zip(predicted, sentences):
        for token, gold in zip(sentence, tags):
            right += token.get_label("predicted").value == gold
            total += 1
    return 100.0 * right / total


def parse_spacy_model(spec: str) -> Tuple[str, str, Dict]:
    """NAME=PATH[,SECTION.KEY=VALUE...] -> (name, path, the config overrides
    for spacy.load as a nested dict, e.g. components.crf_tagger.quantize=int8),
    the values read as spaCy's command line reads them."""
    from spacy.cli._util import parse_config_overrides
    from spacy.util import dot_to_dict

    name, path, args = parse_spec(spec, "PATH")
    return name, path, dot_to_dict(parse_config_overrides(args))


def spacy_side_by_side(
    models: List[str], tagger, sentences: Sentences, *, column: str, repeats: int, batch_size: int
) -> Dict[str, Dict]:
    """Inference words/s and dev accuracy of spaCy pipelines (NAME=PATH) beside
    the Flair tagger: one doc per sentence (Flair's unit), gold tokens, one
    pass of each system in turn, `repeats` times, after a warm-up of each."""
    import spacy
    from spacy.tokens import Doc

    from .common import words_per_second

    attr = "tag_" if column == "xpos" else "pos_"
    pipelines = {}
    for spec in models:
        name, path, overrides = parse_spacy_model(spec)
        nlp = spacy.load(path, config=overrides)
        docs = [Doc(nlp.vocab, words=list(words)) for words, _ in sentences]
        right = sum(
            getattr(token, attr) == gold
            for doc, (_, tags) in zip(nlp.pipe(d.copy() for d in docs), sentences)
            for token, gold in zip(doc, tags)
        )
        pipelines[name] = (nlp, docs, 100.0 * right / sum(len(doc) for doc in docs))
    rates: Dict[str, List[float]] = {name: [] for name in ["flair", *pipelines]}
    for _ in range(repeats):
        rates["flair"] += predict_rate(tagger, sentences, repeats=1, batch_size=batch_size)[1]
        for name, (nlp, docs, _) in pipelines.items():
            rates[name] += words_per_second(nlp, docs, repeats=1, batch_size=batch_size)[1]
    return {
        name: {
            "words_per_second": round(statistics.median(runs), 1),
            "runs": [round(r, 1) for r in runs],
            "dev_accuracy": round(pipelines[name][2], 4) if name in pipelines else None,
        }
        for name, runs in rates.items()
    }


def time_inference(tagger, dev: Sentences, args: argparse.Namespace) -> Dict:
    """The trained tagger's inference figures on one thread: words/s, its
    runs, dev words and accuracy, and the --spacy-model pipelines in turn."""
    import torch

    torch.set_num_threads(1)
    tagger.eval()
    rate, rates, n_dev_words = predict_rate(tagger, dev, repeats=args.repeats, batch_size=args.batch_size)
    dev_accuracy = accuracy(tagger, dev, args.batch_size)
    side_by_side = (
        spacy_side_by_side(
            args.spacy_model, tagger, dev, column=args.column, repeats=args.repeats, batch_size=args.batch_size
        )
        if args.spacy_model
        else None
    )
    if side_by_side:
        side_by_side["flair"]["dev_accuracy"] = round(dev_accuracy, 4)
    return {
        "pipe_words_per_second": round(rate, 1),
        "inference_runs": [round(r, 1) for r in rates],
        "inference_words": n_dev_words,
        "dev_accuracy": round(dev_accuracy, 4),
        "side_by_side": side_by_side,
    }


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=Path, required=True, help="CoNLL-U")
    parser.add_argument("--dev", type=Path, required=True, help="CoNLL-U")
    parser.add_argument("--column", default="xpos", choices=["upos", "xpos"], help="the tags to learn")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--max-minutes", type=float, help="stop after the epoch in which this many minutes passed")
    parser.add_argument("--threads", type=int, default=1, help="torch threads in training (inference: one)")
    parser.add_argument("--repeats", type=int, default=5, help="timed inference passes")
    parser.add_argument("--batch-size", type=int, default=256, help="predict's mini-batch size")
    parser.add_argument("--min-freq", type=int, default=2, help="rarer train words share <unk>")
    parser.add_argument("--word-dim", type=int, default=100, help="width of the word embeddings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--spacy-model",
        action="append",
        default=[],
        help="NAME=PATH[,SECTION.KEY=VALUE...]: a spaCy pipeline (loaded with those config "
        "values, e.g. components.crf_tagger.quantize=int8) whose inference is timed in turn "
        "with Flair's",
    )
    parser.add_argument("--workdir", type=Path, default=Path("training/peers/flair"))
    add_allocator_argument(parser)
    parser.add_argument("--output", type=Path)
    parser.add_argument(
        "--retime",
        action="store_true",
        help="train nothing: time the inference of WORKDIR/model/best-model.pt (or "
        "final-model.pt) again (with the --spacy-model pipelines) and update those figures "
        "in the JSON at --output, which keeps the training figures of the run that trained it",
    )
    args = parser.parse_args(argv)
    use_allocator(args.allocator)
    if args.retime and not (args.output and args.output.exists()):
        parser.error("--retime needs --output: the JSON of the run that trained WORKDIR/model/best-model.pt")
    if args.epochs < 1 or args.repeats < 1 or args.threads < 1:
        parser.error("--epochs, --repeats and --threads must be at least 1")
    if args.max_minutes is not None and args.max_minutes < 0:
        parser.error("--max-minutes must be at least 0")
    try:
        train, dev = read_conllu(args.train, args.column), read_conllu(args.dev, args.column)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    data = args.workdir / "data"
    write_columns(train, data / "train.txt")
    write_columns(dev, data / "dev.txt")

    # before Flair (and the transformers it imports) loads: no hub, no cache
    # outside the workdir, and --threads threads (torch is imported already:
    # set_num_threads below is what counts)
    os.environ.update(
        {
            "OMP_NUM_THREADS": str(args.threads),
            "MKL_NUM_THREADS": str(args.threads),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "FLAIR_CACHE_ROOT": str((args.workdir / "cache").resolve()),
        }
    )
    import torch

    torch.set_num_threads(args.threads)

    start = time.perf_counter()  # the training step: import, corpus, model, epochs
    try:
        flair = import_flair()
    except ImportError as err:
        print(err, file=sys.stderr)
        return 1
    from flair.data import Dictionary
    from flair.datasets import ColumnCorpus
    from flair.embeddings import (
        CharacterEmbeddings,
        OneHotEmbeddings,
        StackedEmbeddings,
    )
    from flair.models import SequenceTagger
    from flair.trainers import ModelTrainer

    # OneHotEmbeddings logs its whole vocabulary (a list), at creation and load
    logging.getLogger("flair").addFilter(lambda record: not isinstance(record.msg, list))
    flair.device = torch.device("cpu")
    flair.set_seed(args.seed)
    corpus = ColumnCorpus(
        data,
        {0: "text", 1: TAG_TYPE},
        train_file="train.txt",
        dev_file="dev.txt",
        autofind_splits=False,
        sample_missing_splits=False,
        column_delimiter="\t",
        comment_symbol=None,
        in_memory=True,
    )
    for split, dataset, sentences in (("train", corpus.train, train), ("dev", corpus.dev, dev)):
        flair_words = sum(len(dataset[i]) for i in range(len(dataset)))
        ours = sum(len(words) for words, _ in sentences)
        if flair_words != ours:
            raise ValueError(PeerErrors.E205.format(flair=flair_words, split=split, ours=ours))
    # Flair computes a dev loss too, which fails on a dev tag missing from the
    # dictionary: such tags (none in EWT) become <unk>, a class train never has
    unseen_dev_tags = sorted({t for _, tags in dev for t in tags} - {t for _, tags in train for t in tags})
    tag_dictionary = corpus.make_label_dictionary(label_type=TAG_TYPE, add_unk=bool(unseen_dev_tags))
    chars = Dictionary(add_unk=True)
    for words, _ in train:
        for word in words:
            for char in word:
                chars.add_item(char)
    embeddings = StackedEmbeddings(
        [
            OneHotEmbeddings.from_corpus(corpus, min_freq=args.min_freq, embedding_length=args.word_dim),
            CharacterEmbeddings(path_to_char_dict=chars, char_embedding_dim=25, hidden_size_char=25),
        ]
    )
    tagger = SequenceTagger(
        hidden_size=256, embeddings=embeddings, tag_dictionary=tag_dictionary, tag_type=TAG_TYPE, use_crf=True
    )
    if args.retime:
        # SequenceTagger.load of stacked embeddings predicts wrongly (flair
        # issue #3459): the tagger is built as for training and takes the
        # saved weights, and must score the dev accuracy the training run had
        saved = args.workdir / "model" / "best-model.pt"  # the model training ends with, as Flair
        saved = saved if saved.exists() else saved.with_name("final-model.pt")  # loads it back
        tagger.load_state_dict(SequenceTagger.load(saved).state_dict())
        trained = json.loads(args.output.read_text())
        inference = time_inference(tagger, dev, args)
        if abs(inference["dev_accuracy"] - trained["dev_accuracy"]) > 1e-3:
            raise ValueError(PeerErrors.E206.format(now=inference["dev_accuracy"], then=trained["dev_accuracy"]))
        # the training run's settings, with the timing's own repeats
        settings = {**trained["settings"], "repeats": args.repeats, "predict_batch_size": args.batch_size}
        result = {**trained, **inference, "settings": settings, "retimed": True, "environment": environment()}
        write_json(result, args.output)
        print(
            f"flair (retimed): predict {result['pipe_words_per_second']:,.0f} words/s (1 thread), "
            f"dev accuracy {result['dev_accuracy']:.2f}"
        )
        return 0
    clock = epoch_clock(start, args.max_minutes * 60 if args.max_minutes is not None else None)
    trainer = ModelTrainer(tagger, corpus)
    trainer.train(
        args.workdir / "model",
        learning_rate=0.1,
        mini_batch_size=32,
        max_epochs=args.epochs,
        embeddings_storage_mode="none",
        plugins=[clock],
    )  # the rest: Flair's defaults
    seconds = time.perf_counter() - start  # the best epoch's model loaded back

    inference = time_inference(tagger, dev, args)
    train_words = sum(len(words) for words, _ in train)
    scores = [p["score"] for p in clock.points]
    stopped_early = clock.epochs_done < args.epochs
    settings = {
        "column": args.column,
        "epochs": args.epochs,
        "max_minutes": args.max_minutes,
        "threads": args.threads,
        "inference_threads": 1,
        "predict_batch_size": args.batch_size,
        "repeats": args.repeats,
        "seed": args.seed,
        "word_embeddings": f"OneHotEmbeddings.from_corpus(min_freq={args.min_freq}, embedding_length={args.word_dim})",
        "char_embeddings": "CharacterEmbeddings(char_embedding_dim=25, hidden_size_char=25), chars of train",
        "tagger": "SequenceTagger(hidden_size=256, rnn_layers=1, use_crf=True, dropout=0.0, word_dropout=0.05, "
        "locked_dropout=0.5, reproject_embeddings=True)",
        "trainer": "ModelTrainer.train(learning_rate=0.1, mini_batch_size=32, optimizer=SGD, anneal_factor=0.5, "
        "patience=3, max_grad_norm=5, best epoch on dev kept)",
        "train": str(args.train),
        "dev": str(args.dev),
        "train_sentences": len(train),
        "dev_sentences": len(dev),
        "vocabulary": len(embeddings.embeddings[0].vocab_dictionary),
        "tags": len({t for _, tags in train for t in tags}),
        "unseen_dev_tags": unseen_dev_tags,
    }
    result = {
        "system": "flair.SequenceTagger",
        "flair": flair.__version__,
        "settings": settings,
        "settings_text": (
            f"Flair {flair.__version__} SequenceTagger: one-hot words (min freq {args.min_freq}, "
            f"{args.word_dim} wide) + char BiLSTM, BiLSTM 256, CRF; SGD 0.1, batch 32, "
            f"{args.threads} thread(s)"
        ),
        "points": clock.points,
        "seconds": round(seconds, 2),
        "best": max(scores) if scores else None,
        "final": scores[-1] if scores else None,
        "epochs_done": clock.epochs_done,
        "stopped_early": stopped_early,
        "stop_reason": ("max-minutes" if clock.out_of_time else "learning rate annealed below Flair's minimum")
        if stopped_early
        else None,
        "train_words": train_words,
        "train_seconds": round(clock.train_seconds, 2),
        "train_words_per_second": round(train_words * clock.epochs_done / clock.train_seconds, 1)
        if clock.train_seconds
        else None,
        **inference,
        "flair_dev_accuracy": clock.accuracies,
        "environment": environment(),
    }
    write_json(result, args.output)
    print(
        f"flair {flair.__version__}: {clock.epochs_done} epochs in {seconds:.0f} s, best dev {result['best']}, "
        f"final {result['final']}; train {result['train_words_per_second']} words/s, "
        f"predict {result['pipe_words_per_second']:,.0f} words/s (1 thread), "
        f"dev accuracy {result['dev_accuracy']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
