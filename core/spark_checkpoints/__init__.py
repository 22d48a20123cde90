"""Spark Structured Streaming checkpoints, the one home of what mm2ctl does with them: read a checkpoint's
last committed batch (a local folder, or any file system through the Spark driver's Hadoop), its Kafka sources
as positions, and the translated position written in the two forms a Spark user can use."""
