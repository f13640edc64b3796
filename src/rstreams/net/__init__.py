"""rstreams.net: RS.io over asyncio (public names are added once the wire core lands)."""
