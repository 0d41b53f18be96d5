"""What is kept on disk: the SQLite measurement cache, the tuning database, measurement files, the atomic writer of
output files, the one JSON-lines writer and reader with the list of file formats (jsonl), and bounded line
readers."""
