"""What is kept on disk: the SQLite measurement cache, the tuning database, measurement files, the atomic writer of
output files, and bounded line readers."""
