"""Pure transforms, frames in and frames out: normalising listings, GPU names, aggregates and trends, the
estimator and its presets and calibration, model configs, cost tables and the API comparison.

No IO and no SQL. It may import scrapers (the parsed record types) and warehouse; never flows.
"""
