"""What a live session keeps between runs: each pair's decoded topics and classified rows, which groups a
run classifies again, and the decoded topics saved between processes."""
