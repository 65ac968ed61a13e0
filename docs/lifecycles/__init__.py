"""Data only: the lifecycle diagrams, `{name}.svg`, each drawn from `{name}.dot`
(domain/lifecycles.py, `python -m tandem.domain.lifecycles --write docs`).

pyproject.toml installs this folder as the package `tandem.lifecycle_diagrams`
with its SVGs as package data, so the console serves them from an installed
Tandem as from a checkout, with no Graphviz: `tandem.adapters.diagrams`. This
file makes it a regular package (a namespace package's resources cannot be
read through an editable install's finder)."""
