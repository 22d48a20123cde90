#!/usr/bin/env bash
# The Spark release matrix: the inspection's tests on other pyspark releases than the pinned one.
#
#   .ci/spark_matrix.sh WHEEL RELEASE...
#
# For each RELEASE (a pyspark version pyproject.toml admits), a virtualenv of its own gets the built WHEEL with
# its test extra and that pyspark, under constraints.txt less its pyspark and py4j pins. The last RELEASE stands
# for the newest: the newest release pyproject.toml admits, as PyPI lists it now (`pip index versions`), runs in
# its place when it is newer (the word `newest` asks for it by name), so a pyspark newer than constraints.txt,
# which `pipx install` would pick, is covered; when PyPI cannot be asked, the given one runs. Such a release's
# Kafka source may not be in the Maven repository yet: the run then takes an older patch release's, and the
# tests show it works. Then, from the clone (the tests are not in the wheel; the package is imported from the
# virtualenv):
#   - the Spark 3.5/4.x compatibility paths and the Kafka source's coordinates (unit tests, one local session);
#   - the inspection on a real MM2 flow (spark-submit included), the Kafka source against a compacted
#     transactional topic, and a read through a Spark Connect server (integration).
# test_inspect.py runs one of its two flows per release, which differ in where Spark's JVM prints: the first
# RELEASE runs the identity-policy flow (-k "not default"), whose inspect runs with -v and the JVM's output on
# stderr (Spark 3.5's Ivy prints on the JVM's stdout), the others the default-policy flow (-k "not identity"),
# the JVM's output in a log file. The policy changes names, not anything Spark does; the pinned release runs
# both. test_spark_queries.py (a query moved across the flow by plan failover + apply) follows the same split on
# the lab each release already runs: the first RELEASE resumes a stateful query from the translated checkpoint
# copy (identity policy), the others start a new query from the startingOffsets file (default policy); its
# timestamp-fallback case (offset syncs disabled) is the translation's, not the release's: pinned release only.
# test_spark_checkpoint_written.py reads checkpoints each release writes and resumes a query with its state
# on the copy apply writes (every release). test_inspect.py's checks of mm2ctl's own logic that no Spark code
# path tells apart (a dead broker, no group to inspect, a group past what MM2 copied) run on the pinned release.
# The matrix picks its tests by file and -k, with -m "": test_spark_connect.py is extended in the main run,
# so CI runs the Spark Connect tests here. The standalone cluster runs on the pinned release only, with the
# extended tests (a shard of them per CI run): submitting to it is spark-submit's path, which test_inspect.py's spark-submit run covers on
# each release. The exporter's reconnection across a Connect server's restart is the exporter's behaviour,
# not the release's: it runs on the pinned release only, with the extended tests. The Connect server of 3.5.3
# is left out: its package (spark-connect_2.12:3.5.3, not in the 3.5 wheels) does not resolve from the Maven
# repository CI reaches. Each release's time is printed, and its lab and server are stopped by the tests
# themselves (the caller's cleanup stops what a crash leaves).
set -euo pipefail
cd "$(dirname "$0")/.."

# The release to run in place of the newest given one ($1): the newest pyspark release on PyPI that
# pyproject.toml's requirement admits when it is newer (or $1 is `newest`), else $1; nothing when PyPI cannot say.
python=.venv/bin/python
[ -x "$python" ] || python=python3
newest_admitted() {
  local listed
  listed=$(timeout 120 "$python" -m pip index versions pyspark 2>/dev/null | sed -n 's/^Available versions: //p') || true
  [ -n "$listed" ] || return 0
  LISTED="$listed" GIVEN="$1" "$python" - <<'PY'
import os
import tomllib

try:
    from packaging.requirements import Requirement
    from packaging.version import Version
except ImportError:  # pip's own copy
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.version import Version

with open("pyproject.toml", "rb") as fh:
    wanted = [Requirement(d) for d in tomllib.load(fh)["project"]["dependencies"]]
spec = next(r.specifier for r in wanted if r.name == "pyspark")
listed = [Version(v.strip()) for v in os.environ["LISTED"].split(",") if v.strip()]
admitted = sorted(v for v in listed if not v.is_prerelease and v in spec)
given = os.environ["GIVEN"]
if not admitted:
    print("" if given == "newest" else given)
elif given == "newest" or admitted[-1] > Version(given):
    print(admitted[-1])
else:
    print(given)
PY
}

wheel=$(realpath "$1")
shift
[ -f "$wheel" ] || { echo "no wheel at $wheel" >&2; exit 2; }

releases=("$@")
last=$(( ${#releases[@]} - 1 ))
given=${releases[$last]}
newest=$(newest_admitted "$given")
if [ -z "$newest" ]; then
  [ "$given" = newest ] && { echo "PyPI did not list pyspark's releases: no release to run for 'newest'" >&2; exit 2; }
  echo "== PyPI did not list pyspark's releases: the newest given, $given, runs" >&2
elif [ "$newest" != "$given" ]; then
  echo "== the newest pyspark pyproject.toml admits on PyPI is $newest: it runs in place of $given"
  releases[$last]=$newest
fi

rc=0
first=${releases[0]}
for release in "${releases[@]}"; do
  started=$(date +%s)
  echo "== pyspark $release: a virtualenv with the wheel"
  work=$(mktemp -d "/tmp/mm2ctl-spark-$release.XXXXXX")
  grep -v -E '^(pyspark|py4j)==' constraints.txt >"$work/constraints.txt"
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q --upgrade pip
  "$work/venv/bin/pip" install -q -c "$work/constraints.txt" "pyspark==$release" "${wheel}[test]"
  "$work/venv/bin/python" -c "import pyspark, mm2ctl; print('pyspark', pyspark.__version__, 'mm2ctl from', mm2ctl.__file__)"
  echo "== pyspark $release: tests"
  connect=tests/integration/test_spark_connect.py
  [ "$release" = 3.5.3 ] && connect=
  flow="not identity"  # test_inspect.py's default-policy flow: the JVM's output in a log file
  if [ "$release" = "$first" ]; then
    flow="not default"  # its identity-policy flow, run with -v: the JVM's output on stderr
  fi
  release_independent="(dead_broker or no_group_to_inspect or past_what_mm2_copied)"
  set +e
  MM2CTL_TEST_LAB_DIR="${MM2CTL_TEST_LAB_DIR:-/tmp}/spark-$release" "$work/venv/bin/python" -m pytest \
    -p no:cacheprovider -m "" \
    tests/unit/test_spark_compat.py tests/unit/test_spark_packages.py tests/unit/test_spark_checkpoint_written.py \
    tests/integration/test_inspect.py tests/integration/test_spark_read.py \
    tests/integration/test_spark_queries.py \
    $connect -k "$flow and not server_restart and not offset_syncs_disabled and not $release_independent"
  code=$?
  set -e
  [ "$code" -eq 5 ] && { echo "pytest collected no tests on pyspark $release" >&2; code=1; }
  [ "$code" -ne 0 ] && rc=1
  echo "== pyspark $release: exit $code in $(( $(date +%s) - started ))s"
  rm -rf "$work"
done
exit "$rc"
