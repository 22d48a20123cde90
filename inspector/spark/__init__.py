"""The Spark session an inspection runs in: start-up (embedded, spark-submit, Spark Connect), the Kafka
source package, the driver JVM's sizing, log and class archive, the PySpark calls that differ between releases,
and Spark's progress."""
