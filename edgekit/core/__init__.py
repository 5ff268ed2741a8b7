"""The records, errors and borders every layer of edgekit uses: the three records that cross module
borders (artifact.py), errors and exit codes, the vendor border, child-process isolation, file reading
and writing, and the small parsers. Nothing heavy is imported here."""
