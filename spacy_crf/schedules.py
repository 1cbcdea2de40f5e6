"""The registered learning-rate schedule `spacy_crf.warmup_linear.v1`.

Thinc's `warmup_linear.v1` is 0 at step 0. `nlp.update` does not step
schedules (`spacy train` does, after each update), so an optimizer that
`nlp.resume_training()` builds from a pipeline's config stays at step 0: with
Thinc's schedule, fine-tuning then changes no weight. This schedule is
Thinc's from step 1 on, and `resume_rate` at step 0: the rate of the first
update of `spacy train`, and of every update of fine-tuning through
`nlp.resume_training()`.
"""

from typing import Iterator, cast

from thinc.api import registry
from thinc.schedules import warmup_linear as thinc_warmup_linear


@registry.schedules("spacy_crf.warmup_linear.v1")
def warmup_linear(initial_rate: float, warmup_steps: int, total_steps: int, resume_rate: float) -> Iterator[float]:
    """Linear warm-up to initial_rate over warmup_steps, then linear decay to
    0 at total_steps (Thinc's warmup_linear.v1), except at step 0.

    initial_rate (float): the rate at the end of the warm-up.
    warmup_steps (int): steps of the warm-up.
    total_steps (int): the step at which the rate reaches 0; keep it equal
        to [training] max_steps.
    resume_rate (float): the rate at step 0, where the optimizer that
        `nlp.resume_training()` builds stays (fine-tuning).
    YIELDS (float): the rate of each step, from step 0.
    """
    # a generator (Thinc annotates it as an Iterable)
    rates = cast(Iterator[float], thinc_warmup_linear(initial_rate, warmup_steps, total_steps))
    next(rates)  # Thinc's step 0: 0
    yield resume_rate
    yield from rates
