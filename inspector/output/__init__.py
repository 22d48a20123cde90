"""What an inspection hands back and how it is written: the result, the CSV and JSON Lines rows, the
monitoring figures and their Prometheus exposition."""
