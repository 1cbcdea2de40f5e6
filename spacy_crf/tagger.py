"""The `crf_tagger` pipeline component: CRF-decoded tags in token.tag_ or token.pos_."""
import copy
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
import srsly
import torch
from spacy import util
from spacy.attrs import POS, TAG
from spacy.language import Language
from spacy.parts_of_speech import IDS as UPOS_IDS
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc, Token
from spacy.training import Example, validate_examples, validate_get_examples
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer, set_dropout_rate
from thinc.model import deserialize_attr

from .architectures import build_crf_layer
from .chunking import chunk_lengths, grid_index
from .embed import set_known_words
from .constraints import SCHEMES, allowed_transitions
from .entities import ENTITY_SCHEMES, entity_tags, gold_entity_tags, tags_to_spans
from .errors import Errors
from .nn import NEG_INF, CRFScores, allowed_from_tags, log_partition, nbest_decode, negative_log_likelihood, viterbi_decode
from .nn import marginals as crf_marginals
from .scorers import crf_tagger_score

default_model_config = """
[model]
@architectures = "spacy_crf.BiLSTMCRF.v1"
hidden_width = 128
depth = 1
dropout = 0.0
crf = true

[model.tok2vec]
@architectures = "spacy.HashEmbedCNN.v2"
pretrained_vectors = null
width = 96
depth = 4
embed_size = 2000
window_size = 1
maxout_pieces = 3
subword_features = true
"""
DEFAULT_CRF_TAGGER_MODEL = Config().from_str(default_model_config)["model"]

# target -> (spaCy attribute id, gold attribute name for Example.get_aligned)
TARGETS = {"tag": (TAG, "TAG"), "pos": (POS, "POS"), "ents": (None, None)}
if not Token.has_extension("crf_confidence"):
    Token.set_extension("crf_confidence", default=None)

UPOS_TAGS = sorted(tag for tag in UPOS_IDS if tag and tag.isupper() and tag != "EOL")


@Language.factory(
    "crf_tagger",
    assigns=["token.tag", "token.pos", "doc.ents", "token.ent_iob", "token.ent_type"],
    default_config={
        "model": DEFAULT_CRF_TAGGER_MODEL,
        "target": "tag",
        "overwrite": False,
        "window": 8192,
        "store_confidence": False,
        "constraints": "auto",
        "scorer": {"@scorers": "spacy_crf.crf_tagger_scorer.v1"},
    },
    default_score_weights={
        "tag_acc": 0.5,
        "pos_acc": 0.5,
        "ents_f": 0.5,
        "ents_p": 0.0,
        "ents_r": 0.0,
        "ents_per_type": None,
    },
)
def make_crf_tagger(
    nlp: Language,
    name: str,
    model: Model[List[Doc], CRFScores],
    target: str,
    overwrite: bool,
    window: int,
    store_confidence: bool,
    constraints: str,
    scorer: Optional[Callable],
) -> "CRFTagger":
    """Create a CRFTagger.

    model (Model[List[Doc], CRFScores]): the network, e.g. spacy_crf.BiLSTMCRF.v1.
    target (str): "tag" writes token.tag_, "pos" writes token.pos_ (UPOS),
        "ents" writes doc.ents through the tags of a scheme (BILUO by default).
    overwrite (bool): replace annotation that a doc already has.
    window (int): docs longer than this many tokens are tagged in windows of
        this size, to bound memory; 0 never splits.
    store_confidence (bool): write the marginal probability of each token's
        predicted tag to token._.crf_confidence.
    constraints (str): "none", or a tag scheme ("BIO"/"IOB2", "BILUO",
        "IOBES") whose invalid transitions get probability exactly 0; "auto"
        is "BILUO" for target "ents" and "none" otherwise.
    scorer (Optional[Callable]): scores tag_acc or pos_acc, to match target.
    """
    return CRFTagger(
        nlp.vocab,
        model,
        name,
        target=target,
        overwrite=overwrite,
        window=window,
        store_confidence=store_confidence,
        constraints=constraints,
        scorer=scorer,
    )


class CRFTagger(TrainablePipe):
    """A sequence tagger whose output layer is a linear-chain CRF.

    Training minimises the CRF negative log-likelihood (tokens without a gold
    label are summed over); prediction is batched Viterbi decoding.
    """

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], CRFScores],
        name: str = "crf_tagger",
        *,
        target: str = "tag",
        overwrite: bool = False,
        window: int = 8192,
        store_confidence: bool = False,
        constraints: str = "auto",
        scorer: Optional[Callable] = crf_tagger_score,
    ) -> None:
        """Initialize a CRF tagger.

        vocab (Vocab): the shared vocabulary.
        model (Model[List[Doc], CRFScores]): the network.
        name (str): the component name, the key of its loss in `losses`.
        target (str): "tag" (token.tag_) or "pos" (token.pos_).
        overwrite (bool): replace existing annotation.
        window (int): tag docs longer than this in windows of this many tokens.
        store_confidence (bool): set token._.crf_confidence.
        constraints (str): "none" or a tag scheme: BIO, IOB2, BILUO, IOBES.
        scorer (Optional[Callable]): the scoring method.
        """
        if target not in TARGETS:
            raise ValueError(
                Errors.E001.format(target=target, name=name, options=list(TARGETS))
            )
        if constraints not in SCHEMES + ("auto",):
            raise ValueError(Errors.E014.format(scheme=constraints, options=list(SCHEMES) + ["auto"]))
        if target == "ents" and constraints not in ENTITY_SCHEMES + ("auto",):
            raise ValueError(Errors.E015.format(name=name, scheme=constraints, options=list(ENTITY_SCHEMES)))
        self.vocab = vocab
        self.model = model
        self.name = name
        self.scorer = scorer
        cfg: Dict[str, Any] = {
            "labels": [],
            "target": target,
            "overwrite": overwrite,
            "window": window,
            "store_confidence": store_confidence,
            "constraints": constraints,
            "input_width": None,
        }
        self.cfg = dict(sorted(cfg.items()))

    @property
    def labels(self) -> Tuple[str, ...]:
        """RETURNS (Tuple[str]): the labels, in the order of the CRF's columns."""
        return tuple(self.cfg["labels"])

    @property
    def label_data(self) -> Tuple[str, ...]:
        """RETURNS (Tuple[str]): the labels, for `spacy init labels`."""
        return self.labels

    @property
    def _scheme(self) -> str:
        """The tag scheme in force: constraints, with "auto" resolved."""
        scheme = self.cfg.get("constraints", "none")
        if scheme == "auto":
            return "BILUO" if self.cfg["target"] == "ents" else "none"
        return scheme

    @property
    def _crf_layer(self) -> Model:
        return self.model.get_ref("output_layer")

    def add_label(self, label: str) -> int:
        """Add a label before the model is initialized.

        label (str): the label.
        RETURNS (int): 0 if the label was already present, otherwise 1.
        """
        if not isinstance(label, str):
            raise ValueError(Errors.E010.format(type=type(label).__name__, label=label))
        if self.cfg["target"] == "ents" and label != "O" and "-" not in label:
            return max([self.add_label(tag) for tag in entity_tags([label], self._scheme)])
        if label in self.labels:
            return 0
        if self.cfg["target"] == "pos" and label not in UPOS_TAGS:
            raise ValueError(Errors.E002.format(label=label, name=self.name, options=UPOS_TAGS))
        if self._crf_layer.layers:
            raise ValueError(
                Errors.E004.format(label=label, name=self.name, n_labels=len(self.labels))
            )
        self.cfg["labels"].append(label)
        self.vocab.strings.add(label)
        return 1

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        labels: Optional[Sequence[str]] = None,
    ) -> None:
        """Collect the labels and build the model for a sample of the data.

        get_examples (Callable[[], Iterable[Example]]): the training examples.
        nlp (Optional[Language]): the pipeline the component belongs to.
        labels (Optional[Sequence[str]]): the labels, e.g. from
            `spacy init labels`; by default they are collected, sorted, from
            the examples.
        """
        validate_get_examples(get_examples, "CRFTagger.initialize")
        util.check_lexeme_norms(self.vocab, "crf_tagger")
        self._crf_layer.layers.clear()  # re-initializing starts afresh
        self.cfg["labels"] = []
        if labels is None and self.cfg["target"] == "ents":
            types = {ent.label_ for example in get_examples() for ent in example.y.ents}
            labels = entity_tags(types, self._scheme) if types else []
        elif labels is None:
            attr = self.cfg["target"] + "_"
            found = {
                getattr(token, attr).lstrip("!")
                for example in get_examples()
                for token in example.y
            }
            labels = sorted(label for label in found if label)
        for label in labels:
            self.add_label(label)
        if not self.labels:
            raise ValueError(
                Errors.E005.format(
                    name=self.name,
                    target=self.cfg["target"],
                    attr="doc.ents" if self.cfg["target"] == "ents" else f"token.{self.cfg['target']}_",
                )
            )
        allowed_transitions(self.labels, self._scheme)  # E013 early
        # words the embedding may keep (min_count): counted over all the data
        set_known_words(self.model, lambda: (example.x for example in get_examples()))
        doc_sample = [example.x for example in islice(get_examples(), 10)]
        self._crf_layer.set_dim("nO", len(self.labels), force=True)
        self.model.initialize(X=doc_sample)
        self.cfg["input_width"] = self._crf_layer.get_dim("nI")

    def __call__(self, doc: Doc) -> Doc:
        """Tag one doc in place (see `pipe`)."""
        error_handler = self.get_error_handler()
        try:
            self._annotate([doc])
            return doc
        except Exception as e:
            error_handler(self.name, self, [doc], e)

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        """Tag a stream of docs in place, batch by batch.

        stream (Iterable[Doc]): the docs.
        batch_size (int): docs per batch.
        YIELDS (Doc): the tagged docs, in order.
        """
        error_handler = self.get_error_handler()
        for docs in util.minibatch(stream, size=batch_size):
            try:
                self._annotate(docs)
                yield from docs
            except Exception as e:
                error_handler(self.name, self, docs, e)

    def _annotate(self, docs: List[Doc]) -> None:
        """predict + set_annotations; with store_confidence, one model pass
        gives both the Viterbi tags and their marginal probabilities."""
        if not self.cfg.get("store_confidence"):
            self.set_annotations(docs, self.predict(docs))
            return
        both = self._by_window(docs, self._decode_with_confidence)
        self.set_annotations(docs, [ids_conf[:, 0].astype("int64") for ids_conf in both])
        for doc, ids_conf in zip(docs, both):
            for token, confidence in zip(doc, ids_conf[:, 1].tolist()):
                token._.crf_confidence = confidence

    def predict(self, docs: Iterable[Doc]) -> List[numpy.ndarray]:
        """Viterbi-decode a batch of docs, without modifying them.

        A doc longer than the `window` setting is tagged window by window (each
        window a doc of its own), so memory stays bounded; shorter docs are
        decoded whole, in one batch.

        docs (Iterable[Doc]): the docs.
        RETURNS (List[numpy.ndarray]): label ids, one array per doc.
        """
        return self._by_window(list(docs), self._decode)

    def marginals(self, docs: Iterable[Doc]) -> List[numpy.ndarray]:
        """Exact marginal probability of every label at every token
        (forward-backward over the CRF), batched like `predict`.

        docs (Iterable[Doc]): the docs.
        RETURNS (List[numpy.ndarray]): one (n_tokens, n_labels) float array per
            doc, columns in `labels` order, rows summing to 1.
        """
        return self._by_window(list(docs), self._marginals)

    def nbest(self, docs: Iterable[Doc], k: int) -> List[List[Tuple[List[str], float]]]:
        """The k most probable tag sequences of each doc (exact k-best Viterbi).

        docs (Iterable[Doc]): the docs.
        k (int): sequences per doc.
        RETURNS (List[List[Tuple[List[str], float]]]): per doc, up to k
            (tags, log probability) pairs in descending order; one tag per token.
        """
        docs = list(docs)
        parts = [self._windows(doc) for doc in docs]
        flat = [part for doc_parts in parts for part in doc_parts]
        chunk_lists = self._nbest_chunks(flat, k)
        results = []
        position = 0
        for doc_parts in parts:
            lists = [c for part_chunks in chunk_lists[position : position + len(doc_parts)] for c in part_chunks]
            position += len(doc_parts)
            best = [((), 0.0)]
            for chunk in lists:
                combined = [(pa + pb, sa + sb) for pa, sa in best for pb, sb in chunk]
                best = sorted(combined, key=lambda item: -item[1])[:k]
            results.append([([self.labels[i] for i in ids], score) for ids, score in best])
        return results

    def _nbest_chunks(self, docs: List[Doc], k: int) -> List[List[List[Tuple[tuple, float]]]]:
        """Per doc, per chunk: up to k (label ids, log probability) pairs."""
        if not any(len(doc) for doc in docs):
            return [[[((), 0.0)]] for _ in docs]
        scores = self._scores(docs)
        paths, values = nbest_decode(scores, k)
        with torch.no_grad():
            log_z = log_partition(scores)
        # one copy for the paths, one for the scores and log Z
        paths = paths.cpu().numpy()
        host = torch.cat([values, log_z[:, None].to(values.dtype)], dim=1).cpu().numpy()
        values, log_z = host[:, :-1], host[:, -1:]
        valid, log_probs = values > NEG_INF / 2, values - log_z
        chunk_size = self._crf_layer.attrs.get("chunk_size", 0)
        per_doc, row = [], 0
        for doc in docs:
            doc_chunks = []
            for n in chunk_lengths([len(doc)], chunk_size):
                ranked = [
                    (tuple(paths[row, r, :n].tolist()), float(log_probs[row, r]))
                    for r in range(paths.shape[1])
                    if valid[row, r]
                ]
                doc_chunks.append(ranked if n else [((), 0.0)])
                row += 1
            per_doc.append(doc_chunks)
        return per_doc

    def _windows(self, doc: Doc) -> List[Doc]:
        """The doc itself, or its windows (docs of `window` tokens) if longer."""
        window = self.cfg.get("window") or 0
        if not window or len(doc) <= window:
            return [doc]
        return [doc[start : start + window].as_doc() for start in range(0, len(doc), window)]

    def _by_window(
        self, docs: List[Doc], run: Callable[[List[Doc]], List[numpy.ndarray]]
    ) -> List[numpy.ndarray]:
        """Apply `run` to the docs in one batch, and to each long doc's windows."""
        window = self.cfg.get("window") or 0
        long_ids = [i for i, doc in enumerate(docs) if window and len(doc) > window]
        if not long_ids:
            return run(docs)
        results: List[Optional[numpy.ndarray]] = [None] * len(docs)
        long_set = set(long_ids)
        short_ids = [i for i in range(len(docs)) if i not in long_set]
        for i, result in zip(short_ids, run([docs[i] for i in short_ids])):
            results[i] = result
        for i in long_ids:  # one window at a time: memory stays bounded
            results[i] = numpy.concatenate([run([part])[0] for part in self._windows(docs[i])])
        return results  # type: ignore[return-value]

    def _scores(self, docs: List[Doc]) -> CRFScores:
        if not self._crf_layer.layers:
            raise ValueError(Errors.E009.format(name=self.name))
        return self._constrain(self.model.predict(docs))

    def _constrain(self, scores: CRFScores) -> CRFScores:
        """Forbidden transitions, starts and ends of the tag scheme get a fixed
        log(0) (differentiable: the forbidden entries get no gradient)."""
        scheme = self._scheme
        if scheme == "none":
            return scores
        emissions, mask, transitions, start, end = scores
        device = transitions.device
        key = (self.labels, scheme, str(device))
        if getattr(self, "_allowed_cache", (None,))[0] != key:
            masks = allowed_transitions(self.labels, scheme)
            self._allowed_cache = (key, [torch.from_numpy(m).to(device) for m in masks])
        allowed_trans, allowed_start, allowed_end = self._allowed_cache[1]
        forbid = lambda x, ok: torch.where(ok, x, torch.full_like(x, NEG_INF))  # noqa: E731
        return CRFScores(
            emissions,
            mask,
            forbid(transitions, allowed_trans),
            forbid(start, allowed_start),
            forbid(end, allowed_end),
        )

    def _per_doc(self, docs: List[Doc], grid: numpy.ndarray) -> List[numpy.ndarray]:
        """Rows of a (chunks, T, ...) host array, regrouped per doc in token order."""
        index = grid_index(self._chunk_lengths(docs), grid.shape[1])
        tokens = grid.reshape(-1, *grid.shape[2:])[index]
        return numpy.split(tokens, numpy.cumsum([len(doc) for doc in docs])[:-1])

    def _decode(self, docs: List[Doc]) -> List[numpy.ndarray]:
        """Run the model on one batch and Viterbi-decode it."""
        if not any(len(doc) for doc in docs):
            return [numpy.zeros((0,), dtype="int64") for _ in docs]
        paths, _ = viterbi_decode(self._scores(docs))
        return self._per_doc(docs, paths.cpu().numpy())  # one device-to-host copy

    def _decode_with_confidence(self, docs: List[Doc]) -> List[numpy.ndarray]:
        """Per doc, an (n_tokens, 2) array: Viterbi label id, its marginal."""
        if not any(len(doc) for doc in docs):
            return [numpy.zeros((0, 2)) for _ in docs]
        scores = self._scores(docs)
        paths, _ = viterbi_decode(scores)
        confidence = crf_marginals(scores).gather(2, paths.unsqueeze(2)).squeeze(2)
        both = torch.stack([paths.to(confidence.dtype), confidence], dim=2).double()
        return self._per_doc(docs, both.cpu().numpy())  # one device-to-host copy

    def _marginals(self, docs: List[Doc]) -> List[numpy.ndarray]:
        if not any(len(doc) for doc in docs):
            return [numpy.zeros((0, len(self.labels)), dtype="float32") for _ in docs]
        probs = crf_marginals(self._scores(docs)).float()
        return self._per_doc(docs, probs.cpu().numpy())

    def set_annotations(self, docs: Iterable[Doc], batch_tag_ids: List[numpy.ndarray]) -> None:
        """Write the predicted labels to the docs.

        docs (Iterable[Doc]): the docs.
        batch_tag_ids (List[numpy.ndarray]): label ids from `predict`.
        """
        if isinstance(docs, Doc):
            docs = [docs]
        if self.cfg["target"] == "ents":
            self._set_entities(docs, batch_tag_ids)
            return
        attr = TARGETS[self.cfg["target"]][0]
        if attr == POS:
            values = [UPOS_IDS[label] for label in self.labels]
        else:
            values = [self.vocab.strings.add(label) for label in self.labels]
        label_values = numpy.asarray(values, dtype="uint64")
        for doc, tag_ids in zip(docs, batch_tag_ids):
            if not len(doc):
                continue
            new = label_values[numpy.asarray(tag_ids, dtype="int64")]
            if not self.cfg["overwrite"]:
                old = doc.to_array(attr)
                new = numpy.where(old == 0, new, old)
            doc.from_array([attr], new.reshape(-1, 1))

    def _set_entities(self, docs: Iterable[Doc], batch_tag_ids: List[numpy.ndarray]) -> None:
        for doc, tag_ids in zip(docs, batch_tag_ids):
            spans = tags_to_spans(doc, [self.labels[i] for i in tag_ids], self._scheme)
            if self.cfg["overwrite"]:
                doc.ents = spans
            else:
                taken = {i for ent in doc.ents for i in range(ent.start, ent.end)}
                new = [s for s in spans if not taken.intersection(range(s.start, s.end))]
                doc.set_ents(list(doc.ents) + new, default="unmodified")

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Learn from a batch of examples: one CRF NLL gradient step.

        examples (Iterable[Example]): the batch.
        drop (float): the dropout rate of the Thinc layers.
        sgd (Optional[Optimizer]): the optimizer; None accumulates gradients.
        losses (Optional[Dict[str, float]]): the running losses, by component.
        RETURNS (Dict[str, float]): the updated losses.
        """
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        examples = list(examples)
        validate_examples(examples, "CRFTagger.update")
        if not any(len(eg.predicted) for eg in examples):
            return losses
        set_dropout_rate(self.model, drop)
        scores, backprop = self.model.begin_update([eg.predicted for eg in examples])
        loss, d_scores = self.get_loss(examples, scores)
        backprop(d_scores)
        if sgd not in (None, False):
            self.finish_update(sgd)
        losses[self.name] += loss
        return losses

    def get_loss(self, examples: Iterable[Example], scores: CRFScores) -> Tuple[float, CRFScores]:
        """The CRF negative log-likelihood of the gold labels and its gradient.

        Tokens without a gold label (missing or misaligned) allow every label;
        a negative label "!TAG" rules TAG out; a doc with no known label adds 0.

        examples (Iterable[Example]): the batch.
        scores (CRFScores): the model's output for the batch.
        RETURNS (Tuple[float, CRFScores]): the summed loss and its gradient with
            respect to emissions, transitions, start and end (None where fixed).
        """
        examples = list(examples)
        validate_examples(examples, "CRFTagger.get_loss")
        flat_tags, flat_excluded = self._gold_ids(examples)
        lengths = self._chunk_lengths([eg.predicted for eg in examples])
        index = grid_index(lengths, scores.emissions.shape[1])
        tags = numpy.full(scores.mask.shape, -1, dtype="int64")
        excluded = numpy.full(scores.mask.shape, -1, dtype="int64")
        tags.ravel()[index] = flat_tags
        excluded.ravel()[index] = flat_excluded
        device = scores.emissions.device
        tags_t = torch.from_numpy(tags).to(device)
        excluded_t = torch.from_numpy(excluded).to(device)
        allowed = allowed_from_tags(tags_t, len(self.labels), excluded=excluded_t)
        has_gold = ((tags_t >= 0) | (excluded_t >= 0)).any(dim=1)
        emissions, mask, transitions, start, end = scores
        leaves = [
            t.detach().requires_grad_(grad)
            for t, grad in [
                (emissions, True),
                (transitions, transitions.requires_grad),
                (start, start.requires_grad),
                (end, end.requires_grad),
            ]
        ]
        with torch.enable_grad():
            constrained = self._constrain(CRFScores(leaves[0], mask, *leaves[1:]))
            nll = negative_log_likelihood(constrained, allowed)
            loss = torch.where(has_gold, nll, torch.zeros_like(nll)).sum()
            trainable = [leaf for leaf in leaves if leaf.requires_grad]
            grads = iter(torch.autograd.grad(loss, trainable))
        loss_value = float(loss.detach())
        if not numpy.isfinite(loss_value):
            finite_scores = all(
                bool(torch.isfinite(t).all()) for t in (emissions, transitions, start, end)
            )
            what = "The loss" if finite_scores else "The model's scores (emissions or transitions)"
            raise ValueError(Errors.E006.format(what=what, name=self.name))
        d_scores = [next(grads) if leaf.requires_grad else None for leaf in leaves]
        return loss_value, CRFScores(d_scores[0], None, *d_scores[1:])

    def _gold_ids(self, examples: List[Example]) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """Gold label ids (-1: unknown) and excluded ids ("!TAG"; -1: none),
        one per predicted token of all examples, in order."""
        index = {label: i for i, label in enumerate(self.labels)}
        if self.cfg["target"] == "ents":
            values = [value for eg in examples for value in gold_entity_tags(eg, self._scheme)]
        else:
            gold_attr = TARGETS[self.cfg["target"]][1]
            values = [v for eg in examples for v in eg.get_aligned(gold_attr, as_string=True)]
        tags = numpy.full(len(values), -1, dtype="int64")
        excluded = numpy.full(len(values), -1, dtype="int64")
        for i, value in enumerate(values):
            if not value:
                continue
            if value in index:
                tags[i] = index[value]
            elif value.startswith("!"):
                excluded[i] = index.get(value[1:], -1)
            else:
                raise ValueError(
                    Errors.E003.format(name=self.name, label=value, n_labels=len(index))
                )
        return tags, excluded

    def _chunk_lengths(self, docs: Sequence[Doc]) -> List[int]:
        """The chunk (CRF row) lengths the model cuts these docs into."""
        chunk_size = self._crf_layer.attrs.get("chunk_size", 0)
        return chunk_lengths([len(doc) for doc in docs], chunk_size)

    # Serialization: the config's sizes go first, then the weights.

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "CRFTagger":
        """Load the component from a bytestring; on failure it is left unchanged.

        bytes_data (bytes): the data, from `to_bytes`.
        exclude (Iterable[str]): fields to skip ("cfg", "vocab", "model").
        RETURNS (CRFTagger): the component.
        """
        self._validate_serialization_attrs()
        loaded: Dict[str, Any] = {}
        readers = {
            "cfg": lambda b: loaded.__setitem__("cfg", srsly.json_loads(b)),
            "vocab": lambda b: loaded.__setitem__("vocab", b),
            "model": lambda b: loaded.__setitem__("model", b),
        }
        try:
            util.from_bytes(bytes_data, readers, exclude)
        except Exception as e:
            raise ValueError(Errors.E007.format(name=self.name, reason=repr(e))) from e
        self._load(loaded.get("cfg"), loaded.get("model"))
        if "vocab" in loaded:
            self.vocab.from_bytes(loaded["vocab"], exclude=exclude)
        return self

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "CRFTagger":
        """Load the component from a directory; on failure it is left unchanged.

        path (Union[str, Path]): the directory, from `to_disk`.
        exclude (Iterable[str]): fields to skip ("cfg", "vocab", "model").
        RETURNS (CRFTagger): the component.
        """
        self._validate_serialization_attrs()
        path = util.ensure_path(path)
        exclude = set(exclude)
        try:
            cfg = None if "cfg" in exclude else srsly.read_json(path / "cfg")
            model_bytes = None if "model" in exclude else (path / "model").read_bytes()
        except Exception as e:
            raise ValueError(Errors.E007.format(name=self.name, reason=repr(e))) from e
        self._load(cfg, model_bytes)
        if "vocab" not in exclude:
            self.vocab.from_disk(path / "vocab", exclude=exclude)
        return self

    def _load(self, cfg: Optional[Dict[str, Any]], model_bytes: Optional[bytes]) -> None:
        """Apply cfg, rebuild the CRF layer to its sizes, load the weights.

        Everything is checked before the component changes; if loading still
        fails, the previous cfg, attributes and weights are put back.
        """
        msg = None
        if model_bytes is not None:
            try:
                msg = srsly.msgpack_loads(model_bytes)
                if not isinstance(msg, dict) or "nodes" not in msg:
                    raise ValueError("no Thinc model in the data")
            except Exception as e:
                raise ValueError(Errors.E007.format(name=self.name, reason=repr(e))) from e
        if cfg is not None and not (
            isinstance(cfg, dict) and isinstance(cfg.get("labels", []), list)
        ):
            raise ValueError(Errors.E007.format(name=self.name, reason="invalid cfg"))
        layer = self._crf_layer
        nodes = list(self.model.walk())
        backup_attrs = [dict(node.attrs) for node in nodes]
        backup_cfg = copy.deepcopy(self.cfg)
        backup_model = self.model.to_bytes() if layer.layers else None
        try:
            if cfg is not None:
                self.cfg.update(cfg)
            self._build_from_cfg()
            if msg is not None:
                self._check_compatible(msg)
                self.model.from_dict(msg)
        except Exception as e:
            for node, attrs in zip(nodes, backup_attrs):
                node.attrs.clear()
                node.attrs.update(attrs)
            self.cfg = backup_cfg
            self._build_from_cfg()
            if backup_model is not None:
                self.model.from_bytes(backup_model)
            else:
                layer.layers.clear()
            raise ValueError(Errors.E008.format(name=self.name, detail=str(e))) from e

    def _check_compatible(self, msg: Dict[str, Any]) -> None:
        """Raise ValueError saying how the saved model differs from this one."""
        nodes = list(self.model.walk())
        if len(msg["nodes"]) != len(nodes):
            raise ValueError(
                f"the file holds {len(msg['nodes'])} layers, the config builds {len(nodes)}"
            )
        layer = self._crf_layer
        index = next(i for i, node in enumerate(nodes) if node is layer)
        for key, saved in msg["attrs"][index].items():
            saved = deserialize_attr(layer.attrs.get(key), saved, key, layer)
            if key in layer.attrs and saved != layer.attrs[key]:
                raise ValueError(f"{key} is {saved!r} in the file, {layer.attrs[key]!r} in the config")
        if not self.model.can_from_dict(msg, strict=False):
            raise ValueError("the layer sizes in the file differ from the config's")

    def _build_from_cfg(self) -> None:
        layer = self._crf_layer
        n_labels, width = len(self.labels), self.cfg.get("input_width")
        if not n_labels or not width:
            return  # an untrained component: nothing to build yet
        if layer.layers and (layer.get_dim("nO"), layer.get_dim("nI")) != (n_labels, width):
            layer.layers.clear()
        layer.set_dim("nO", n_labels, force=True)
        layer.set_dim("nI", width, force=True)
        build_crf_layer(layer)
