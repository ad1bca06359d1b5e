"""torch.optim stand-in: an Optimizer with torch 2.x's per-instance step post-hooks."""
import itertools

_ids = itertools.count()


class _RemovableHandle:
    def __init__(self, hooks, key):
        self._hooks = hooks
        self._key = key

    def remove(self):
        self._hooks.pop(self._key, None)


class Optimizer:
    def __init__(self, params=(), defaults=None):
        self.param_groups = [{"params": list(params)}]
        self._step_post_hooks = {}
        self.steps = 0

    def register_step_post_hook(self, hook):
        key = next(_ids)
        self._step_post_hooks[key] = hook
        return _RemovableHandle(self._step_post_hooks, key)

    def step(self, closure=None):
        self.steps += 1
        for hook in list(self._step_post_hooks.values()):
            hook(self, (), {})


class SGD(Optimizer):
    pass


class OldOptimizer:
    """torch < 2.0: no register_step_post_hook."""

    def __init__(self):
        self.steps = 0

    def step(self, closure=None):
        self.steps += 1
