"""Fine-tuning a sourced component on new labels through `spacy train`.

spaCy builds a component that a config sources (`source = "my_pipeline"`)
from the source pipeline's own config, so a setting beside `source` is not
read, and a sourced component is not initialized, so `[initialize.components]`
does not reach it either. This callback, in `[initialize.before_init]`, sets
`learn_new_labels` on the named components before training starts:

    [initialize.before_init]
    @callbacks = "spacy_crf.learn_new_labels.v1"
    components = ["crf_tagger"]
"""

from typing import Callable, List

from spacy.language import Language
from spacy.util import registry

from ..errors import Errors
from .base import CRFComponent


@registry.callbacks("spacy_crf.learn_new_labels.v1")
def make_learn_new_labels(components: List[str]) -> Callable[[Language], Language]:
    """A callback that sets `learn_new_labels` on spacy-crf components.

    components (List[str]): the names of the components, e.g. ["crf_tagger"].
    RETURNS (Callable[[Language], Language]): the callback (E061 where a name
        is not a spacy-crf component of the pipeline).
    """

    def learn_new_labels(nlp: Language) -> Language:
        ours = [name for name, proc in nlp.components if isinstance(proc, CRFComponent)]
        for component in components:
            if component not in ours:
                reason = (
                    "the pipeline has no such component"
                    if component not in nlp.component_names
                    else "it is not a spacy-crf component"
                )
                raise ValueError(Errors.E061.format(component=component, reason=reason, options=", ".join(ours)))
            pipe = nlp.get_pipe(component)
            assert isinstance(pipe, CRFComponent)
            pipe.learn_new_labels = True
        return nlp

    return learn_new_labels
