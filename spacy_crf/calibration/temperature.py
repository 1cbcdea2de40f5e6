"""Temperature calibration: the temperature tau of a component's
probabilities P_tau(y | x), proportional to exp(Score(x, y) / tau) (see
`CRFComponent.temperature`; decoding does not depend on tau), is fitted by a
golden-section search over log tau in [LOW, HIGH] of an objective (the gold
labels' NLL, or the decoded entities' log loss): deterministic, and never
worse than the candidates tried beside it (tau = 1, the stored value).
`CalibrationReport` is how well the probabilities fit at one tau. The job
that reads a pipeline and saves the fitted tau is `spacy_crf.calibrate`."""

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Sequence, Tuple

from .metrics import N_BINS, Outcomes

# the range of the search, and its precision in log tau (0.1 % of tau)
LOW, HIGH = 0.01, 100.0
TOLERANCE = 1e-3


@dataclass
class CalibrationReport:
    """How well the component's probabilities fit annotated docs at one temperature.

    temperature (float): tau.
    nll (float): the gold labels' negative log-likelihood, in nats per
        token with a gold label.
    tokens (Outcomes): each token with a gold label: the probability of its
        predicted (Viterbi) label, and whether that label is the gold one.
    entities (Optional[Outcomes]): target "ents": each predicted entity's
        posterior, and whether exactly that span and label is gold; None
        for other targets.
    """

    temperature: float
    nll: float
    tokens: Outcomes
    entities: Optional[Outcomes] = None

    def metrics(self, n_bins: int = N_BINS) -> Dict[str, Optional[float]]:
        """RETURNS (Dict[str, Optional[float]]): temperature, nll,
        token_ece, token_brier, token_accuracy and, for entities,
        ents_ece, ents_brier, ents_precision (None where nothing was judged)."""
        result: Dict[str, Optional[float]] = {"temperature": self.temperature, "nll": self.nll}
        result.update({f"token_{key}": value for key, value in self.tokens.metrics(n_bins).items()})
        if self.entities is not None:
            metrics = self.entities.metrics(n_bins)
            result.update(ents_ece=metrics["ece"], ents_brier=metrics["brier"], ents_precision=metrics["accuracy"])
        return result


def _memoized(function: Callable[[float], float]) -> Tuple[Callable[[float], float], Dict[float, float]]:
    """The function computed once per point, NaN read as +inf, and the dict
    of the points computed so far."""
    values: Dict[float, float] = {}

    def f(x: float) -> float:
        if x not in values:
            value = float(function(x))
            values[x] = math.inf if math.isnan(value) else value
        return values[x]

    return f, values


def golden_section(
    function: Callable[[float], float], low: float, high: float, *, tolerance: float = TOLERANCE
) -> Tuple[float, Tuple[float, float]]:
    """Minimise a function of one variable on [low, high] by golden-section
    search: exact, to within `tolerance`, for a unimodal function; NaN
    values count as +inf.

    function (Callable[[float], float]): the function.
    low (float): the lower end of the interval.
    high (float): the upper end.
    tolerance (float): stop when the bracket is narrower than this.
    RETURNS (Tuple[float, Tuple[float, float]]): the best point evaluated
        (of equal values, the one closest to 0), and the final bracket: an
        end still at `low` or `high` means the minimum may lie beyond it.
    """
    f, values = _memoized(function)
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = low, high
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    while b - a > tolerance:
        if f(c) <= f(d):
            b, d = d, c
            c = b - ratio * (b - a)
        else:
            a, c = c, d
            d = a + ratio * (b - a)
    f(c)
    f(d)
    best = min(values, key=lambda x: (values[x], abs(x)))
    return best, (a, b)


@dataclass
class TemperatureFit:
    """A fitted temperature.

    temperature (float): the tau of least NLL (or entity log loss) found.
    nll (Dict[float, float]): the summed objective at every tau tried.
    at_edge (bool): whether tau is at an end of the searched range (the
        NLL may fall further outside it).
    """

    temperature: float
    nll: Dict[float, float] = field(default_factory=dict)
    at_edge: bool = False


def fit_temperature(
    nll: Callable[[float], float],
    *,
    low: float = LOW,
    high: float = HIGH,
    tolerance: float = TOLERANCE,
    candidates: Sequence[float] = (1.0,),
) -> TemperatureFit:
    """The temperature of least NLL: a golden-section search over log tau in
    [low, high], and the candidates (tau = 1 by default), whichever is best;
    a tie goes to the candidate, then to the tau closest to 1.

    nll (Callable[[float], float]): the NLL at a temperature, e.g.
        `GoldScores.nll`.
    low (float): the least tau searched, > 0.
    high (float): the largest.
    tolerance (float): the search's precision, in log tau.
    candidates (Sequence[float]): taus also tried.
    RETURNS (TemperatureFit): tau, the NLL at each tau tried, and whether
        the search ended at an end of its range.
    """
    if not 0 < low < high:
        raise ValueError(f"the search range must have 0 < low < high, got [{low}, {high}]")
    at, values = _memoized(nll)
    log_low, log_high = math.log(low), math.log(high)
    best_log, bracket = golden_section(lambda x: at(math.exp(x)), log_low, log_high, tolerance=tolerance)
    searched = math.exp(best_log)
    ranked = [(at(tau), 0, abs(math.log(tau)), tau) for tau in candidates]
    ranked.append((at(searched), 1, abs(best_log), searched))
    best = min(ranked)[3]
    at_edge = best == searched and (bracket[0] == log_low or bracket[1] == log_high)
    return TemperatureFit(best, dict(sorted(values.items())), at_edge)
