"""The public APIs (`tandem.replay`, `tandem.replay.proving`) and the
documented example.

- `import tandem.replay` (the runtime: engine, store port, trace parser) works
  without Hypothesis, and exports none of the proving tools;
- `tandem.replay.proving`'s invariants and checker names work without
  Hypothesis (what `tandem check` runs); the fuzzing names import it when
  asked for;
- `from tandem.replay.proving import check` is the function, however the
  check module was imported;
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
        "import tandem.replay as replay\n"
        "from tandem.replay import Engine, Located, parse_trace\n"
        "assert 'tandem.replay.proving' not in sys.modules, 'the runtime imported the proving tools'\n"
        "for name in ('check', 'catalog', 'Monitor', 'TandemMachine', 'nothing'):\n"
        "    try:\n"
        "        getattr(replay, name)\n"
        "    except AttributeError:\n"
        "        pass\n"
        "    else:\n"
        "        raise SystemExit(f'tandem.replay.{name} exists')\n"
        "import tandem.replay.proving.check\n"
        "import tandem.replay.proving as proving\n"
        "from tandem.replay.proving import check, catalog, Monitor, write_trace, state_invariant, ProvingStore\n"
        "assert callable(check) and check.__module__ == 'tandem.replay.proving.check', check\n"
        "assert len(catalog()) >= 20\n"
        "assert 'hypothesis' not in sys.modules, 'the runtime or the checker imported hypothesis'\n"
        "from tandem.replay.proving import TandemMachine, machine, traces\n"
        "assert 'hypothesis' in sys.modules\n"
        "try:\n"
        "    proving.nothing\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('tandem.replay.proving.nothing exists')\n"
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
