"""``mm2ctl plan failover``: what it is asked, what it reads, each row's translation, the checks on the
target groups, MM2's rows not yet copied and stopping the mirroring, the writes, and Spark queries."""
