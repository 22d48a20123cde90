"""The translation rule: where a position on one cluster lies on the other. The conservative rule over offset
syncs, proofs by content, the timestamp fallback, the methods and which are exact, and the metadata mm2ctl writes
with each translated offset."""
