"""The shared core of mm2ctl: MM2 config, topic naming, record codecs, the Kafka admin facade, errors.

It imports nothing from ``inspector``, ``plans``, ``remediate``, ``connect_client`` or ``lab``; they all
import it. That keeps the import graph one-directional (docs/design.md, "Parts").
"""
