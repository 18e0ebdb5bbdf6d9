"""AWS's own SQS CLI examples, run unmodified against okuri (see README.md here).

`discover()` finds and parses the examples shipped inside the installed awscli package;
`Runner(...).run(example)` prepares okuri for one, runs it with the real `aws` and compares the
output with the documented one. `python -m compat.awscli --help` runs them by hand.
"""

from __future__ import annotations

from compat.awscli.examples import Example, ExampleFile, Expected, discover, examples_dir
from compat.awscli.runner import HANDLED, Outcome, Runner
from compat.awscli.shape import Comparison, compare

__all__ = [
    "HANDLED",
    "Comparison",
    "Example",
    "ExampleFile",
    "Expected",
    "Outcome",
    "Runner",
    "compare",
    "discover",
    "examples_dir",
]
