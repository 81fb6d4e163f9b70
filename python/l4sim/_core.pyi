"""Type stubs of the compiled extension ``l4sim._core`` (crates/l4sim-py)."""

__version__: str
MODEL_VERSION: str
#: "release", or the label benchmarks/pgo_build.py gives the builds it makes.
BUILD: str

class ScenarioError(ValueError):
    """An invalid scenario; ``str(e)`` is ``"FIELD: MESSAGE"``."""

    field: str
    message: str
    source: str | None

def run(scenario_json: str) -> str:
    """Run a scenario (core JSON form); returns the result as JSON. Releases the GIL."""

def validate(scenario_json: str) -> None:
    """Parse and validate a scenario (core JSON form); raises ScenarioError."""

def registry() -> dict[str, list[str]]:
    """The names the core accepts, from its enums: ``cc`` (congestion controls), ``qdisc``
    (qdisc kinds), ``source`` (traffic source kinds), ``topology`` (topology kinds) and
    ``ecn_sysctl`` (values of net.ipv4.tcp_ecn)."""

class Simulation:
    """A steppable simulation (core JSON in and out); ``l4sim.Simulation`` wraps it."""

    def __init__(self, scenario_json: str) -> None: ...
    @property
    def now(self) -> float: ...
    @property
    def end(self) -> float: ...
    def run_until(self, t: float) -> None:
        """Process events up to ``t`` seconds. Releases the GIL."""
    def drain(self, forget: bool = False) -> str:
        """What happened since the previous drain, as JSON; ``forget``: drop it afterwards."""
    def add_flow(self, flow_json: str) -> None: ...
    def remove_flow(self, name: str) -> None: ...
    def set_flow(self, name: str, changes_json: str) -> None: ...
    def set_link(self, name: str | None = None, rate: float | None = None, qdisc_json: str | None = None) -> None: ...
    def result(self) -> str:
        """The result so far, as JSON."""
