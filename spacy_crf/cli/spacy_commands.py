"""spaCy's commands that key on factory names, for pipelines of crf
components: `spacy debug data` runs its tag, morph and entity checks only for
components named "tagger", "morphologizer" and "ner", and `spacy evaluate
--displacy-path` renders entities only for a "ner". Here `debug_data` runs
spaCy's own checks with each crf component in the config swapped for the
spaCy component that writes the same annotation (the checks read the data
and the labels initialize finds in it, not the model), and `render_entities`
writes the entities.html that `spacy evaluate` would write."""

import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

from spacy import util
from spacy.training import Corpus
from thinc.api import Config
from wasabi import msg

# crf_tagger's targets (0.x's moved ones included) by the spaCy component that writes the same
TAGGER_TARGETS = {
    "tag": "tagger",
    "tag+pos": "tagger",
    "pos": "morphologizer",
    "morph": "morphologizer",
    "pos+morph": "morphologizer",
    "tag+pos+morph": "morphologizer",
    "ents": "ner",
}


def spacy_factory(component: Dict[str, Any]) -> Optional[str]:
    """The spaCy factory that writes what a crf component's config block
    writes ("tagger", "morphologizer" or "ner"); None for another component."""
    factory = component.get("factory")
    if factory == "crf_ner":
        return "ner"
    if factory == "crf_morphologizer":
        return "morphologizer"
    if factory == "crf_tagger":
        return TAGGER_TARGETS.get(component.get("target", "tag"), "tagger")
    return None


def with_spacys_components(config: Config) -> Tuple[Config, Dict[str, str]]:
    """A copy of the config with each crf component replaced by spaCy's
    (same name, spaCy's default settings and network), and the swaps made,
    {name: spaCy factory}. Their [initialize.components] entries are dropped:
    spaCy's components find their labels in the data."""
    config = Config(config).copy()
    swapped = {}
    for name, component in config.get("components", {}).items():
        factory = spacy_factory(component)
        if factory is not None:
            swapped[name] = factory
    for name, factory in swapped.items():
        config["components"][name] = {"factory": factory}
        config.get("initialize", {}).get("components", {}).pop(name, None)
    return config, swapped


def debug_data(config_path: Union[str, Path], overrides: Dict[str, Any], *, verbose: bool = False) -> int:
    """`spacy debug data` with the config's crf components swapped for
    spaCy's (see `with_spacys_components`), so that its tag, morph and entity
    checks run; its report is printed as spaCy prints it."""
    from spacy.cli.debug_data import debug_data as spacys_debug_data

    config = util.load_config(config_path, overrides=overrides, interpolate=False)
    swapped_config, swapped = with_spacys_components(config)
    if not swapped:
        msg.warn("The config has no crf_tagger, crf_morphologizer or crf_ner: this is spaCy's debug data as it is")
    for name, factory in swapped.items():
        msg.info(f"Checking the data of '{name}' as spaCy's {factory} reads it")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.cfg"
        swapped_config.to_disk(path)
        spacys_debug_data(path, config_overrides={}, verbose=verbose, silent=False, no_format=False)
    return 0


def render_entities(
    model: Union[str, Path],
    data: Union[str, Path],
    output: Union[str, Path],
    *,
    limit: int = 25,
    gold_preproc: bool = False,
) -> Path:
    """Tag the first `limit` texts of DATA with the pipeline and write
    OUTPUT/entities.html (displaCy's entity view), as `spacy evaluate
    --displacy-path` does for spaCy's ner. RETURNS (Path): the file."""
    from spacy.cli.evaluate import render_parses

    nlp = util.load_model(model)
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    examples = list(Corpus(data, gold_preproc=gold_preproc, limit=limit)(nlp))
    if not examples:
        raise ValueError(f"'{data}' has no docs to render")
    docs = list(nlp.pipe(example.reference.text for example in examples))
    render_parses(docs, output, model_name=str(model), limit=limit, deps=False, ents=True, spans=False)
    return output / "entities.html"
