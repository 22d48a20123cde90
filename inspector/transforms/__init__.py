"""The inspection's pure DataFrame steps: decode MM2's records, fold offset syncs into runs, translate,
keep the live checkpoints, classify, replication health, the summary."""
