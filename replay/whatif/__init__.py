"""What if: change the past, see exactly which decisions change (docs/whatif.md).

`edits`: the edits and how they apply to a trace's lines; `diff`: two runs
compared, decision by decision and view by view; `model`: the answer's JSON.
Pure: the runs themselves are adapters/whatif.py's and adapters/whatif_store.py's."""
