"""`python -m spacy_crf distill TEACHER STUDENT_CONFIG --output DIR`: train a
student pipeline from a teacher pipeline's exact posteriors.

    python -m spacy_crf distill training/trf/model-best configs/cpu.cfg --output training/student \\
        --paths.train corpus/train.spacy --paths.dev corpus/dev.spacy [--text more.txt] [--gpu-id 0]

The student is built from its config as `spacy train` builds it, each CRF
component with the labels of its teacher (the teacher's component of the
same name, or its only one of the same factory). The training docs are the
train corpus's (its annotation is not read: the teacher labels them) and
any raw text added with --text (.txt: a doc per line; .jsonl: a "text" field
per line; .spacy: the docs as they are). The teacher scores every training
doc once, and its scores are cached in DIR/teacher_scores/ (reused by a
later run with the same teacher, config and docs; the teacher is the slow
part). The loop is `spacy_crf.resumable_training`'s, with each step the
components' `distill` from the cached scores: dev is scored on gold every
eval_frequency steps (spaCy's table logger, with a progress bar), model-best
and model-last are saved as `spacy train` saves them, and the same command
run again resumes from DIR/checkpoint. The student runs without the teacher.
"""

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy
import spacy
import srsly
from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import load_config, registry, resolve_dot_names
from thinc.api import Config
from wasabi import msg

from .components import CRFComponent
from .errors import Errors
from .ml.teacher_scores import TeacherScores
from .resumable_training import train as resumable_train

CRF_FACTORIES = ("crf_tagger", "crf_morphologizer", "crf_ner")
# components a student may share between its CRF components: updated through their listeners
SHARED_ENCODERS = ("tok2vec", "transformer")
CACHE = "teacher_scores"
# where a training doc keeps its place in the cache
DOC_INDEX = "spacy_crf.distill_index"


class CachedTeacher:
    """A teacher component's scores for the training docs, read from the
    cache: what `distill` asks a teacher for (`teacher_scores`)."""

    def __init__(self, tags: Sequence[str], arrays: Dict[str, numpy.ndarray], name: str) -> None:
        self.name = name
        self.tags = tuple(tags)
        self.offsets = arrays["offsets"]
        self.emissions = arrays["emissions"]
        classes = arrays.get("classes")
        self.parameters = (arrays["transitions"], arrays["start"], arrays["end"], classes)

    def teacher_scores(self, docs: Iterable[Doc]) -> TeacherScores:
        """The cached scores of training docs (E070 for a doc the cache lacks)."""
        emissions = []
        for doc in docs:
            index = doc.user_data.get(DOC_INDEX)
            if index is None or not 0 <= index < len(self.offsets) - 1:
                raise ValueError(
                    Errors.E070.format(name=self.name, reason="a doc that is not one of the training docs")
                )
            start, end = self.offsets[index], self.offsets[index + 1]
            if end - start != len(doc):
                raise ValueError(Errors.E070.format(name=self.name, reason=f"doc {index} has another length"))
            emissions.append(self.emissions[start:end])
        transitions, start_scores, end_scores, classes = self.parameters
        return TeacherScores(self.tags, emissions, transitions, start_scores, end_scores, classes)


def distill(
    teacher_path: str,
    config_path: Path,
    output: Path,
    *,
    overrides: Optional[Dict[str, Any]] = None,
    texts: Sequence[Path] = (),
    use_gpu: int = -1,
    progress: bool = True,
) -> Language:
    """Distil the teacher pipeline into a student built from its config.

    teacher_path (str): the teacher pipeline (folder or package name).
    config_path (Path): the student's training config.
    output (Path): where model-best, model-last, checkpoint/ and teacher_scores/ go.
    overrides (Optional[Dict[str, Any]]): config overrides (--paths.train ...).
    texts (Sequence[Path]): raw text added to the training docs.
    use_gpu (int): the GPU's id, -1 for the CPU.
    progress (bool): a progress bar between evaluations (spaCy's ConsoleLogger.v3).
    RETURNS (Language): the trained student.
    """
    from spacy.cli._util import setup_gpu
    from spacy.training.initialize import init_nlp

    setup_gpu(use_gpu)
    teacher_nlp = spacy.load(teacher_path)
    config = load_config(config_path, overrides=overrides or {}, interpolate=False)
    teachers = teacher_components(teacher_nlp, config)
    for name, teacher in teachers.items():
        config["initialize"].setdefault("components", {})[name] = {"labels": list(teacher.label_data)}
    logger = config["training"]["logger"]
    if progress and logger.get("@loggers") == "spacy.ConsoleLogger.v3" and logger.get("progress_bar") is None:
        logger["progress_bar"] = "eval"
    nlp = init_nlp(config, use_gpu=use_gpu)
    examples = training_examples(nlp, texts)
    output.mkdir(parents=True, exist_ok=True)
    cached, fingerprint = cached_teachers(teacher_nlp, teachers, [eg.reference for eg in examples], output / CACHE)
    encoders = [name for name in nlp.pipe_names if nlp.get_pipe_meta(name).factory in SHARED_ENCODERS]

    def update(batch: List[Example], *, drop: float, losses: Dict[str, float], exclude: Sequence[str]) -> None:
        for name, proc in nlp.pipeline:
            if name in exclude:
                continue
            if name in cached:
                proc.distill(cached[name], batch, drop=drop, sgd=None, losses=losses)  # type: ignore[attr-defined]  # a CRFComponent
            elif name in encoders:
                proc.update(batch, drop=drop, sgd=None, losses=losses)  # type: ignore[attr-defined]  # a Tok2Vec or Transformer

    return resumable_train(
        nlp, output, use_gpu=use_gpu, examples=examples, update=update, fingerprint_extra=fingerprint
    )


def teacher_components(teacher_nlp: Language, config: Config) -> Dict[str, CRFComponent]:
    """The teacher's component of each CRF component of the student's config
    (the one of the same name, else the only one of the same factory; E069
    without one); E069 too for a trainable student component that neither
    has a teacher nor is a shared encoder."""
    teachers: Dict[str, CRFComponent] = {}
    for name in config["nlp"]["pipeline"]:
        block = config["components"][name]
        factory = block.get("factory")
        if factory not in CRF_FACTORIES:
            if factory in SHARED_ENCODERS or "source" in block or name in config["training"]["frozen_components"]:
                continue
            if factory in ("sentencizer", "senter", "attribute_ruler", "entity_ruler", "span_ruler", "lemmatizer"):
                continue
            raise ValueError(Errors.E069.format(name=name, reason=f"its factory {factory!r} cannot be distilled"))
        same_name = teacher_nlp.get_pipe(name) if name in teacher_nlp.pipe_names else None
        if isinstance(same_name, CRFComponent) and teacher_nlp.get_pipe_meta(name).factory == factory:
            teachers[name] = same_name
            continue
        candidates = [
            proc
            for other, proc in teacher_nlp.pipeline
            if isinstance(proc, CRFComponent) and teacher_nlp.get_pipe_meta(other).factory == factory
        ]
        if len(candidates) != 1:
            found = ", ".join(teacher_nlp.pipe_names) or "none"
            reason = f"the teacher has {len(candidates)} {factory} components (its components: {found})"
            raise ValueError(Errors.E069.format(name=name, reason=reason))
        teachers[name] = candidates[0]
    if not teachers:
        raise ValueError(Errors.E069.format(name="(any)", reason="the student's config has no CRF component"))
    return teachers


def training_examples(nlp: Language, texts: Sequence[Path]) -> List[Example]:
    """The training docs: the config's train corpus (its examples'
    reference tokens; annotation dropped) and the raw texts, each as an
    Example of two copies of the doc (teacher's and student's), numbered
    for the cache."""
    config = nlp.config.interpolate()
    T = registry.resolve(config["training"])
    (train_corpus,) = resolve_dot_names(config, [T["train_corpus"]])
    docs = [plain_doc(nlp, eg.reference) for eg in train_corpus(nlp)]
    for path in texts:
        docs.extend(read_raw(nlp, path))
    examples = []
    for i, doc in enumerate(docs):
        doc.user_data[DOC_INDEX] = i
        teacher_doc = doc.copy()
        teacher_doc.user_data[DOC_INDEX] = i
        examples.append(Example(doc, teacher_doc))
    return examples


def plain_doc(nlp: Language, doc: Doc) -> Doc:
    """The doc's tokens (and whitespace) without any annotation."""
    return Doc(nlp.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc])


def read_raw(nlp: Language, path: Path) -> List[Doc]:
    """Docs of raw text: .txt (one per non-empty line), .jsonl (the "text"
    field of each line), .spacy (the docs' tokens); E071 otherwise."""
    path = Path(path)
    if path.suffix == ".txt":
        lines = path.read_text(encoding="utf8").splitlines()
        return [nlp.make_doc(line) for line in lines if line.strip()]
    if path.suffix == ".jsonl":
        docs = []
        for number, record in enumerate(srsly.read_jsonl(path), start=1):
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                raise ValueError(Errors.E071.format(path=path, reason=f'line {number} has no "text" string'))
            docs.append(nlp.make_doc(record["text"]))
        return docs
    if path.suffix == ".spacy":
        return [plain_doc(nlp, doc) for doc in DocBin().from_disk(path).get_docs(nlp.vocab)]
    raise ValueError(Errors.E071.format(path=path, reason="its suffix is none of .txt, .jsonl, .spacy"))


def cached_teachers(
    teacher_nlp: Language, teachers: Dict[str, CRFComponent], docs: Sequence[Doc], folder: Path
) -> Tuple[Dict[str, CachedTeacher], str]:
    """The teachers' scores of the docs from the cache in `folder`, computed
    and written there first unless it holds those of this teacher and these
    docs. RETURNS: the cached teacher of each student component, and the
    cache's fingerprint."""
    fingerprint = teacher_fingerprint(teacher_nlp, teachers, docs)
    meta_path = folder / "meta.json"
    if not (meta_path.exists() and srsly.read_json(meta_path).get("fingerprint") == fingerprint):
        msg.info(f"Scoring {len(docs):,} training docs with the teacher (cached in {folder})")
        write_cache(teacher_nlp, teachers, docs, folder, fingerprint)
    else:
        msg.info(f"Reading the teacher's scores of {len(docs):,} training docs from {folder}")
    meta = srsly.read_json(meta_path)
    cached = {}
    for name in teachers:
        try:
            with numpy.load(folder / f"{name}.npz") as arrays:
                loaded = {key: arrays[key] for key in arrays.files}
        except (OSError, ValueError) as err:
            raise ValueError(
                Errors.E070.format(name=name, reason=f"{folder / (name + '.npz')} is unreadable ({err})")
            ) from err
        if len(loaded.get("offsets", ())) != len(docs) + 1 or loaded["offsets"][-1] != len(loaded["emissions"]):
            raise ValueError(Errors.E070.format(name=name, reason=f"{folder / (name + '.npz')} does not fit its docs"))
        cached[name] = CachedTeacher(meta["tags"][name], loaded, name)
    return cached, fingerprint


def teacher_fingerprint(teacher_nlp: Language, teachers: Dict[str, CRFComponent], docs: Sequence[Doc]) -> str:
    """A hash of the teacher pipeline's weights and settings, the component
    names and the docs' tokens."""
    digest = hashlib.sha256()
    for _, proc in teacher_nlp.pipeline:
        if hasattr(proc, "to_bytes"):
            digest.update(proc.to_bytes())
    digest.update(json.dumps({name: list(t.tags) for name, t in teachers.items()}, sort_keys=True).encode("utf8"))
    for doc in docs:
        digest.update("\x1f".join(t.text for t in doc).encode("utf8") + b"\x1e")
    return digest.hexdigest()


def write_cache(
    teacher_nlp: Language,
    teachers: Dict[str, CRFComponent],
    docs: Sequence[Doc],
    folder: Path,
    fingerprint: str,
    batch_size: int = 64,
) -> None:
    """Score the docs with the teacher pipeline (its other components first,
    as nlp.pipe runs them: a transformer's output for its listeners) and
    write each component's scores, then meta.json last (a kill leaves no
    cache that looks whole)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.json").unlink(missing_ok=True)
    parts: Dict[str, List[TeacherScores]] = {name: [] for name in teachers}
    for start in range(0, len(docs), batch_size):
        batch = [plain_doc(teacher_nlp, doc) for doc in docs[start : start + batch_size]]
        for _, proc in teacher_nlp.pipeline:
            wanted = [student for student, teacher in teachers.items() if teacher is proc]
            for student in wanted:
                parts[student].append(proc.teacher_scores(batch))  # type: ignore[attr-defined]  # a CRFComponent
            if not wanted:
                batch = list(proc.pipe(batch)) if hasattr(proc, "pipe") else [proc(doc) for doc in batch]
    tags = {}
    for name, scores in parts.items():
        emissions = [e for part in scores for e in part.emissions]
        first = scores[0] if scores else teachers[name].teacher_scores([])
        arrays: Dict[str, Any] = {
            "emissions": numpy.concatenate(emissions) if emissions else numpy.zeros((0, len(first.tags)), "float32"),
            "offsets": numpy.cumsum([0] + [len(e) for e in emissions]).astype("int64"),
            "transitions": first.transitions,
            "start": first.start,
            "end": first.end,
        }
        if first.classes is not None:
            arrays["classes"] = first.classes
        tmp = folder / f"{name}.npz.tmp"
        with tmp.open("wb") as file:
            numpy.savez(file, **arrays)
        os.replace(tmp, folder / f"{name}.npz")
        tags[name] = list(first.tags)
    srsly.write_json(folder / "meta.json", {"fingerprint": fingerprint, "tags": tags, "docs": len(docs)})
