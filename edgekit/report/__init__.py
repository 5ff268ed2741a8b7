"""The presentation layer: every table, Markdown file and chart edgekit shows, built from records alone.

- convert.py: the `edgekit convert` table (from a Manifest)
- inspect.py: the `edgekit inspect` tables (from an InspectReport)
- profile.py: the `edgekit profile` table (from a ProfileResult)
- bench.py: the `edgekit bench` rows as text, the screen table, bench.md and bench.png (from a BenchReport)

Nothing here measures or converts; commands call these with the records their work returned.
"""

from edgekit.report.convert import convert_table

__all__ = ["convert_table"]
