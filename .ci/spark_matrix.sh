#!/usr/bin/env bash
# The Spark release matrix: the inspection's tests on other pyspark releases than the pinned one.
#
#   .ci/spark_matrix.sh WHEEL RELEASE...
#
# For each RELEASE (a pyspark version pyproject.toml admits), a virtualenv of its own gets the built WHEEL with
# its test extra and that pyspark, under constraints.txt less its pyspark and py4j pins. Then, from the
# clone (the tests are not in the wheel; the package is imported from the virtualenv):
#   - the Spark 3.5/4.x compatibility paths and the Kafka source's coordinates (unit tests, one local session);
#   - the inspection on a real MM2 flow, the Kafka source against a compacted transactional topic, the
#     inspection submitted to a standalone cluster, and a read through a Spark Connect server (integration).
# test_inspect.py runs its default-policy flow only (-k "not identity"): the identity policy changes names,
# not anything Spark does, and is covered on the pinned release. The standalone cluster runs on the first
# RELEASE only (the oldest: Scala 2.12); the pinned release runs it in the main suite on Scala 2.13, as the
# newest would again. The exporter's reconnection across a Connect server's restart is the exporter's behaviour,
# not the release's: it runs on the pinned release only. The Connect server of 3.5.3 is left out: its
# package (spark-connect_2.12:3.5.3, not in the 3.5 wheels) does not resolve from the Maven repository CI
# reaches. Each release's time is printed, and its lab, cluster and server are stopped by the tests themselves
# (the caller's cleanup stops what a crash leaves).
set -euo pipefail
cd "$(dirname "$0")/.."

wheel=$(realpath "$1")
shift
[ -f "$wheel" ] || { echo "no wheel at $wheel" >&2; exit 2; }

rc=0
first=$1
for release in "$@"; do
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
  cluster=tests/integration/test_spark_cluster.py
  [ "$release" != "$first" ] && cluster=
  set +e
  MM2CTL_TEST_LAB_DIR="${MM2CTL_TEST_LAB_DIR:-/tmp}/spark-$release" "$work/venv/bin/python" -m pytest \
    -p no:cacheprovider \
    tests/unit/test_spark_compat.py tests/unit/test_spark_packages.py \
    tests/integration/test_inspect.py tests/integration/test_spark_read.py $cluster \
    $connect -k "not identity and not server_restart"
  code=$?
  set -e
  [ "$code" -eq 5 ] && { echo "pytest collected no tests on pyspark $release" >&2; code=1; }
  [ "$code" -ne 0 ] && rc=1
  echo "== pyspark $release: exit $code in $(( $(date +%s) - started ))s"
  rm -rf "$work"
done
exit "$rc"
