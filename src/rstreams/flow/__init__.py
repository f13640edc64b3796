"""Building blocks that obey the rules: sources, operators, async boundaries, sinks, adapters.

The public names are re-exported from :mod:`rstreams`; import them from there.
"""
