"""The public API (`replay`) and its documented example.

- `import replay` and its engine, invariants and checker names work without
  Hypothesis; the fuzzing names import it when asked for;
- `from replay import check` is the function, however replay.check was imported;
- docs/fuzzing.md shows docs/examples/test_my_rules.py verbatim, and that file
  passes as shown (`python -m pytest docs/examples/test_my_rules.py -q`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_replay_without_hypothesis() -> None:
    code = (
        "import sys\n"
        "import tandem.replay.proving.check\n"
        "import tandem.replay as replay\n"
        "from tandem.replay import check, catalog, Engine, Located, Monitor, write_trace\n"
        "assert callable(check) and check.__module__ == 'tandem.replay.proving.check', check\n"
        "assert len(catalog()) >= 20\n"
        "assert 'hypothesis' not in sys.modules, 'replay imported hypothesis'\n"
        "from tandem.replay import TandemMachine\n"
        "assert 'hypothesis' in sys.modules\n"
        "try:\n"
        "    replay.nothing\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('replay.nothing exists')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_the_documented_example_is_the_file_and_passes_as_shown() -> None:
    example = (ROOT / "docs" / "examples" / "test_my_rules.py").read_text()
    assert f"```python\n{example}```" in (ROOT / "docs" / "fuzzing.md").read_text()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "docs/examples/test_my_rules.py", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
