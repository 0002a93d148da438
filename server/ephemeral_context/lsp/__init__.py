"""The language server: a thin LSP shell over the core; only this package imports pygls.

server.py registers every handler (one core call each), protocol.py types our methods,
converters.py translates core results, options.py reads the client settings, transport.py
frames the wire, throttle.py paces usage notifications, apply_edit.py routes the model's
edits through the client.
"""
