"""Kafka I/O: the admin facade, the group calls librdkafka lacks, raw record reads and writes, MM2's record
codecs, Connect's offsets topic, and what a compacted or transactional topic holds."""
