"""Runs at scale: xdist's scheduling of notebooks (`xdist`), shards and the durations
that balance them (`shards`, with the pure balancing in `balance`)."""
