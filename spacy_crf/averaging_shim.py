"""A PyTorchShim whose `use_params` finds the optimizer's averaged weights.

Thinc's optimizer keys each torch parameter by `(shim.id, name)` when
`PyTorchShim.finish_update` calls it, but `PyTorchShim.use_params` only looks
for `"pytorch_{id}_{name}"` keys. With `use_averages = true` the averages of
the torch weights were therefore never used to evaluate or save a pipeline;
only the Thinc layers' were. This shim accepts both kinds of key.
"""
import contextlib
from typing import Any, Dict, Iterator

from thinc.api import PyTorchShim, xp2torch


class AveragingPyTorchShim(PyTorchShim):
    """PyTorchShim that swaps in averaged parameters keyed `(id, name)`."""

    @contextlib.contextmanager
    def use_params(self, params: Dict[Any, Any]) -> Iterator[None]:
        prefix = f"pytorch_{self.id}_"
        state = {}
        for key, value in params.items():
            if isinstance(key, tuple) and len(key) == 2 and key[0] == self.id:
                name = key[1]
            elif isinstance(key, str) and key.startswith(prefix):
                name = key[len(prefix) :]
            else:
                continue
            state[name] = xp2torch(value, device=self.device)
        if not state:
            yield
            return
        backup = {k: v.clone() for k, v in self._model.state_dict().items()}
        self._model.load_state_dict(state, strict=False)
        try:
            yield
        finally:
            self._model.load_state_dict(backup)
