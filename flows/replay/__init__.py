"""The replay server (recorded responses served on 127.0.0.1 at the providers' real paths), its fault injection,
and the demo that runs the nightly flow against it. Tests, benchmarks and users all use the same server.
"""
