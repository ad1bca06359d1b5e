"""torch.profiler stand-in: `profile` with start/stop on the class, like torch 2.x.

EVENTS records "start"/"stop" in call order (the shim's pause/resume must bracket them).
"""
EVENTS = []


class _KinetoProfile:
    def __init__(self, *args, fail_start=False, **kwargs):
        self.running = False
        self.fail_start = fail_start

    def start(self):
        if self.fail_start:
            raise RuntimeError("fake profiler: start failed")
        self.running = True
        EVENTS.append("start")

    def stop(self):
        self.running = False
        EVENTS.append("stop")


class profile(_KinetoProfile):
    # start() is the class's own (as in torch 2.x); stop() is inherited here so that the shim's
    # undo covers both cases.
    def start(self):
        super().start()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()

    def step(self):
        pass
