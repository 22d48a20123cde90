"""Client security: MM2's Java client settings as librdkafka's (TLS, keystores, SASL, JAAS, OAuth), the ACLs
mm2ctl's calls need, and which values are secret."""
