"""The domain rules written once, as functions over Arrow tables, that Spark and a live session both run."""
