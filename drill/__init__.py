"""The failover drill (seed 002's quarterly test) and the demo, run against a lab or given clusters."""
