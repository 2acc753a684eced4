"""Type hints for the compiled engine, ``yee._native`` (python/src/lib.rs)."""

from typing import Optional, TypedDict

class CheckReport(TypedDict):
    ok: bool
    problems: list[tuple[str, int, int, str]]
    warnings: list[str]
    lines: list[str]
    message: str

def main(argv: list[str]) -> int:
    """Run the ``yee`` command line (program name first) in-process; its exit status."""

def check(text: str, file: str) -> CheckReport:
    """Check scene text as ``yee check`` does; ``file`` names it and is where its relative
    paths are read from."""

def plan(
    text: str,
    file: str,
    gpus: Optional[str] = None,
    host_memory: Optional[str] = None,
    backend: Optional[str] = None,
    price: Optional[float] = None,
    ranks: Optional[int] = None,
    network: Optional[str] = None,
) -> tuple[str, str]:
    """The plan of valid scene text: (its JSON object as text, the report ``yee plan`` prints)."""

def version() -> str:
    """The engine's version."""
