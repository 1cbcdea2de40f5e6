"""What the accuracy scripts share: gold sentences, tagging them on their own tokens, and the arguments."""
import argparse
import json
from pathlib import Path
from typing import Iterator, List, Optional

import spacy
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab


def gold_sentences(corpus_path: str, vocab: Vocab) -> List[Doc]:
    """The corpus' sentences, one doc each, as `spacy evaluate --gold-preproc` reads them
    (a doc without sentence boundaries is one sentence).

    corpus_path (str): a .spacy file.
    vocab (Vocab): the vocab the docs use.
    RETURNS (List[Doc]): one doc per sentence, with its gold annotation.
    """
    return [sent for doc in DocBin().from_disk(corpus_path).get_docs(vocab) for sent in sentences(doc)]


def sentences(doc: Doc) -> List[Doc]:
    """The doc's sentences, each a doc; the doc itself where it has no sentence boundaries."""
    return [sent.as_doc() for sent in doc.sents] if doc.has_annotation("SENT_START") else [doc]


def tag_gold_tokens(model_path: str, gold_docs: List[Doc]) -> Iterator[Doc]:
    """The docs tagged by the pipeline at model_path, on their own tokens.

    model_path (str): a pipeline for spacy.load.
    gold_docs (List[Doc]): the docs whose words are tagged.
    RETURNS (Iterator[Doc]): new docs, in order, annotated by the pipeline.
    """
    nlp = spacy.load(model_path)
    return nlp.pipe(Doc(nlp.vocab, words=[t.text for t in doc]) for doc in gold_docs)


def model_train_dev_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments of a script that scores a model against its training and dev data.

    doc (str): the script's docstring; its first line describes the script.
    RETURNS (argparse.ArgumentParser): model, train, dev and --attr.
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("train")
    parser.add_argument("dev")
    parser.add_argument("--attr", default="tag_", help="tag_ or pos_")
    return parser


def print_and_write(record: dict, output: Optional[Path]) -> None:
    """Print a script's result as indented JSON and write it to output (its
    folder made), if given."""
    text = json.dumps(record, indent=2)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n")
    print(text)
