"""Tandem's proving tools: the invariants catalog, the bounded model checker
and the Hypothesis fuzzer (docs/fuzzing.md, docs/invariants.md)."""
