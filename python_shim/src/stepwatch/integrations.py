"""Trainer integrations, thin and import-guarded: each class is built on first access, so importing
this module needs neither PyTorch Lightning nor Hugging Face transformers.

    from stepwatch.integrations import StepwatchCallback          # PyTorch Lightning
    trainer = lightning.Trainer(callbacks=[StepwatchCallback()])

    from stepwatch.integrations import StepwatchTrainerCallback   # Hugging Face Trainer
    trainer = transformers.Trainer(..., callbacks=[StepwatchTrainerCallback()])

Both mark one stepwatch step per training step (contiguous steps: the data wait of a step falls
inside it), end the open step when evaluation starts and when training ends, time GC pauses and
pause stepwatch while torch.profiler runs (stepwatch.torch.watch). The trainers fetch batches
internally, so data-wait evidence needs the loader wrapped by you:
`stepwatch.torch.wrap_loader(loader)` (Lightning accepts any iterable as train_dataloaders).
"""
import importlib

from . import _api

_built = {}


def _import_first(candidates, what):
    for module, attr in candidates:
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            continue
    raise ImportError("stepwatch.integrations.%s needs %s" % what)


class _WatchMixin:
    """Shared by both callbacks: the watch() handle's lifetime is the training run's."""

    def _sw_start(self, gc):
        from . import torch as _sw_torch

        self._sw_stop()
        self._sw_watch = _sw_torch.watch(gc=gc)

    def _sw_stop(self):
        _api.step_end()
        w = getattr(self, "_sw_watch", None)
        self._sw_watch = None
        if w is not None:
            w.close()


def _build_lightning():
    base = _import_first([("lightning.pytorch", "Callback"), ("pytorch_lightning", "Callback")],
                         ("StepwatchCallback", "PyTorch Lightning (lightning or pytorch_lightning)"))

    class StepwatchCallback(_WatchMixin, base):
        """PyTorch Lightning callback: one stepwatch step per training batch."""

        def __init__(self, gc=True):
            super().__init__()
            self._sw_gc = gc
            self._sw_watch = None

        def on_train_start(self, trainer, pl_module):
            self._sw_start(self._sw_gc)

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args):
            _api.step()

        def on_validation_start(self, trainer, pl_module):
            _api.step_end()

        def on_train_end(self, trainer, pl_module):
            self._sw_stop()

        def on_exception(self, trainer, pl_module, exception):
            self._sw_stop()

    return StepwatchCallback


def _build_transformers():
    base = _import_first([("transformers", "TrainerCallback"), ("transformers.trainer_callback", "TrainerCallback")],
                         ("StepwatchTrainerCallback", "Hugging Face transformers"))

    class StepwatchTrainerCallback(_WatchMixin, base):
        """Hugging Face TrainerCallback: one stepwatch step per optimizer step (on_step_begin)."""

        def __init__(self, gc=True):
            super().__init__()
            self._sw_gc = gc
            self._sw_watch = None

        def on_train_begin(self, args, state, control, **kwargs):
            self._sw_start(self._sw_gc)

        def on_step_begin(self, args, state, control, **kwargs):
            _api.step()

        def on_prediction_step(self, args, state, control, **kwargs):
            # Evaluation inside training: the training step ended before it (NO_STEP afterwards).
            _api.step_end()

        def on_train_end(self, args, state, control, **kwargs):
            self._sw_stop()

    return StepwatchTrainerCallback


_BUILDERS = {"StepwatchCallback": _build_lightning, "StepwatchTrainerCallback": _build_transformers}


def __dir__():
    return sorted(list(globals()) + list(_BUILDERS))


def __getattr__(name):
    builder = _BUILDERS.get(name)
    if builder is None:
        raise AttributeError("module 'stepwatch.integrations' has no attribute %r" % name)
    if name not in _built:
        _built[name] = builder()
    return _built[name]
