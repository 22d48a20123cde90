"""MM2's configuration: where a setup comes from (a properties file, a Strimzi resource, live connectors),
the resolved model, MM2's defaults, filters and topic naming, and what a flow's settings mean."""
