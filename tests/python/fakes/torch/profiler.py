"""torch.profiler stand-in, structured like torch 2.x: _KinetoProfile has prepare_trace (Kineto
takes CUPTI), start_trace, stop_trace (Kineto lets go); start() = prepare_trace + start_trace,
stop() = stop_trace; `profile` defines its own start() and inherits the rest. A profiler with a
schedule calls prepare_trace/stop_trace only around its windows (the tests call them directly).

EVENTS records "prepare"/"start"/"stop" in call order (the shim's pause/resume must bracket them).
`legacy_profile` has only start/stop (the shim's fallback patch points).
"""
EVENTS = []


class ProfilerActivity:
    CPU = 0
    CUDA = 1


class _KinetoProfile:
    def __init__(self, *args, fail_start=False, **kwargs):
        self.running = False
        self.fail_start = fail_start

    def start(self):
        self.prepare_trace()
        self.start_trace()

    def stop(self):
        self.stop_trace()

    def prepare_trace(self):
        if self.fail_start:
            raise RuntimeError("fake profiler: prepare failed")
        EVENTS.append("prepare")

    def start_trace(self):
        self.running = True
        EVENTS.append("start")

    def stop_trace(self):
        self.running = False
        EVENTS.append("stop")


class profile(_KinetoProfile):
    def start(self):
        super().start()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()

    def step(self):
        pass


class legacy_profile:
    def __init__(self, *args, **kwargs):
        pass

    def start(self):
        EVENTS.append("start")

    def stop(self):
        EVENTS.append("stop")

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
