"""The failover drill (the failover test a DR plan asks for) and the demo, run against a lab or given clusters."""
