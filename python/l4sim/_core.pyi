"""Type stubs of the compiled extension ``l4sim._core`` (crates/l4sim-py)."""

__version__: str
MODEL_VERSION: str

class ScenarioError(ValueError):
    """An invalid scenario; ``str(e)`` is ``"FIELD: MESSAGE"``."""

    field: str
    message: str
    source: str | None

def run(scenario_json: str) -> str:
    """Run a scenario (core JSON form); returns the result as JSON. Releases the GIL."""

def validate(scenario_json: str) -> None:
    """Parse and validate a scenario (core JSON form); raises ScenarioError."""

