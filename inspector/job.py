"""``mm2ctl inspect`` as a Spark application: ``spark-submit …/mm2ctl/inspector/job.py --mm2-config F --output P``.

It runs the one orchestrator (``inspector.inspection``) with ``mm2ctl inspect``'s selection arguments, under
whatever master and packages ``spark-submit`` was given (README, "Running on a Spark cluster"), and writes the
rows with Spark's own writers: a folder of part files at a path or URI, as a cluster job should. It exits 10
when any row is a problem, and with the error's exit code (one line on stderr) when the setup is bad.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mm2ctl.inspector.job", description="mm2ctl inspect as a Spark application")
    parser.add_argument("--mm2-config")
    parser.add_argument("--from-connect")
    parser.add_argument("--secrets")
    parser.add_argument("--policy-naming", choices=["default", "identity"])
    parser.add_argument("--pair", action="append", default=[])
    parser.add_argument("--groups")
    parser.add_argument("--topics")
    parser.add_argument("--active-only", action="store_true")
    parser.add_argument("--only-problems", action="store_true")
    parser.add_argument("--exact", action="store_true")
    parser.add_argument("--spark-checkpoint", action="append", default=[])
    parser.add_argument("--format", choices=["csv", "json", "parquet"], default="parquet")
    parser.add_argument("--output", required=True)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one inspection and write its rows to ``--output``; the process's exit code."""
    from mm2ctl.connect_client.factory import connector_config_reader
    from mm2ctl.core.config.sources import ConfigSource, resolve_config
    from mm2ctl.core.errors import Mm2ctlError
    from mm2ctl.core.exit_codes import ExitCode
    from mm2ctl.inspector.opening import SparkPlace, open_inspection
    from mm2ctl.inspector.selection import InspectOptions, Selection

    args = _parse_args(sys.argv[1:] if argv is None else argv)

    def progress(message: str) -> None:
        print(message, file=sys.stderr)

    try:
        options = InspectOptions(
            pairs=tuple(args.pair),
            selection=Selection(groups=args.groups, topics=args.topics, active_only=args.active_only),
            only_problems=args.only_problems,
            exact=args.exact,
            spark_checkpoints=tuple(args.spark_checkpoint),
        )
        source = ConfigSource(
            mm2_config=args.mm2_config,
            from_connect=args.from_connect,
            secrets=args.secrets,
            policy_naming=args.policy_naming,
        )
        config = resolve_config(source, read_connectors=connector_config_reader())
        with open_inspection(config, options, SparkPlace(), progress=progress) as inspector:
            result = inspector.run(progress=progress)
            try:
                result.rows.write(args.format, args.output)
            finally:
                result.close()
    except Mm2ctlError as exc:
        print(f"mm2ctl.inspector.job: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    for note in result.notes:
        print(f"note: {note.cluster_pair}: {note.topic} on {note.cluster}: {note.message}", file=sys.stderr)
    problems = result.problems + result.partition_problems
    return int(ExitCode.PROBLEMS_FOUND if problems else ExitCode.OK)


if __name__ == "__main__":
    sys.exit(main())
