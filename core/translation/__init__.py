"""The translation rule: where a position on one cluster lies on the other. The conservative rule over offset
syncs, proofs by content, the timestamp fallback, the methods and which are exact, and the metadata mm2ctl writes
with each translated offset. ``inspector.rules.translation`` is the conservative rule again, over many group
offsets and runs of syncs at once as Arrow tables, for ``inspect`` (Spark's workers cannot import this package)."""
