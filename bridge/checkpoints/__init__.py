"""Checkpoints (issue 23): every step that can change files bracketed by snapshots in a shadow git store outside the
repository (store.py), recorded per session with the call and prompt that made it (log.py, recorder.py, through the
executor's steps hook: observer.py); rewinding the code three-way (rewind.py) and reviewing per file and hunk after
the fact (review.py) are views on that store and log. The conversation's side is bridge/history.py."""
