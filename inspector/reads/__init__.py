"""What an inspection reads on the driver before Spark works, and the internal topics it reads with Spark's
Kafka source: admin state, committed offsets, group types, MM2's position, replicated partitions."""
