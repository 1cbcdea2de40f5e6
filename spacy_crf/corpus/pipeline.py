"""The pipeline side of corpus tagging: load a pipeline, find its crf_tagger
components, ship it to workers as bytes, and tag the records of a chunk.

Only spaCy's public API of a loaded pipeline is used (`spacy.load`,
`nlp.pipe`, `nlp.to_bytes`/`from_bytes`, the components' `cfg`), so any
pipeline with a crf_tagger works, whatever its other components.
"""
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Union

import spacy
from spacy.language import Language
from spacy.tokens import Doc
from thinc.api import Config

from .errors import CorpusErrors
from .writers import Outputs, encode_chunk


_WORKER = f"{socket.gethostname()}:{os.getpid()}"


def load_pipeline(model: Union[str, Path]) -> Language:
    """Load a pipeline and check that it has a crf_tagger.

    model (Union[str, Path]): a pipeline folder or an installed package name.
    RETURNS (Language): the pipeline.
    """
    try:
        nlp = spacy.load(model)
    except (OSError, IOError, ValueError, ImportError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(CorpusErrors.E103.format(model=model, reason=reason)) from err
    outputs_of(nlp, model=str(model))
    return nlp


def outputs_of(nlp: Language, *, model: str = "pipeline") -> Outputs:
    """What the pipeline's crf_tagger components write.

    nlp (Language): the pipeline.
    model (str): its name, for the error message.
    RETURNS (Outputs): the targets ("tag", "pos", "morph", "ents") and whether
        token._.crf_confidence is set.
    """
    targets, confidence = [], False
    for name in nlp.pipe_names:
        if nlp.get_pipe_meta(name).factory != "crf_tagger":
            continue
        cfg = nlp.get_pipe(name).cfg
        for target in cfg["target"].split("+"):  # "tag+pos" writes both, ...
            if target not in targets:
                targets.append(target)
        confidence = confidence or bool(cfg.get("store_confidence", False))
    if not targets:
        raise ValueError(CorpusErrors.E104.format(model=model, components=list(nlp.pipe_names)))
    return Outputs(targets=tuple(sorted(targets)), confidence=confidence)


def pipeline_payload(nlp: Language) -> Dict[str, Any]:
    """Everything a worker needs to rebuild the pipeline: its config and bytes.

    nlp (Language): the pipeline.
    RETURNS (Dict[str, Any]): {"config": str, "bytes": bytes}.
    """
    return {"config": nlp.config.to_str(), "bytes": nlp.to_bytes()}


def pipeline_from_payload(payload: Dict[str, Any]) -> Language:
    """Rebuild a pipeline from `pipeline_payload`'s output.

    payload (Dict[str, Any]): the config and the bytes.
    RETURNS (Language): the pipeline.
    """
    config = Config().from_str(payload["config"], interpolate=False)
    nlp = spacy.util.load_model_from_config(config, auto_fill=False, validate=False)
    return nlp.from_bytes(payload["bytes"])


def make_input(nlp: Language, record: Dict[str, Any]) -> Union[str, Doc]:
    """A record as nlp.pipe takes it: its text, or a Doc of its tokens."""
    if record["words"] is not None:
        return Doc(nlp.vocab, words=record["words"], spaces=record["spaces"])
    return record["text"]


@dataclass
class ChunkResult:
    """A tagged chunk: the encoded output and its counts.

    shard (str): the shard's name.
    index (int): the chunk's index within the shard.
    payload (bytes): the output of the chunk's docs (see writers.encode_chunk).
    docs (int): documents tagged.
    words (int): tokens tagged.
    bad (List[str]): the messages of the chunk's bad records.
    started (float): when tagging the chunk began (time.time() where it ran).
    finished (float): when it ended.
    worker (str): the process that tagged it ("host:pid").
    """

    shard: str
    index: int
    payload: bytes
    docs: int
    words: int
    bad: List[str]
    started: float = 0.0
    finished: float = 0.0
    worker: str = ""


class ChunkTagger:
    """Tags the records of a chunk with a pipeline and encodes the output.

    nlp (Language): the pipeline.
    output_format (str): "docbin", "parquet" or "jsonl".
    batch_size (int): nlp.pipe's batch size.
    """

    def __init__(self, nlp: Language, *, output_format: str, batch_size: int) -> None:
        self.nlp = nlp
        self.outputs = outputs_of(nlp)
        self.output_format = output_format
        self.batch_size = batch_size

    def __call__(self, shard: str, index: int, records: List[Dict[str, Any]], bad: List[str]) -> ChunkResult:
        """Tag a chunk's records with one nlp.pipe call and encode the docs.

        shard (str): the shard's name.
        index (int): the chunk's index within the shard.
        records (List[Dict[str, Any]]): the chunk's good records.
        bad (List[str]): the messages of its bad records, passed through.
        RETURNS (ChunkResult): the encoded output and its counts.
        """
        started = time.time()
        docs = list(self.nlp.pipe((make_input(self.nlp, r) for r in records), batch_size=self.batch_size))
        payload = encode_chunk(docs, records, output_format=self.output_format, outputs=self.outputs)
        n_words = sum(len(doc) for doc in docs)
        return ChunkResult(shard, index, payload, len(docs), n_words, list(bad), started, time.time(), _WORKER)
