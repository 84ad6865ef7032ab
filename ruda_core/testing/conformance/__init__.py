"""The conformance test modules: written once, run on every selected device.

Run them with the plugin loaded (``pytest -p ruda_core.testing.plugin --pyargs
ruda_core.testing.conformance``); see ``docs/conformance.md``.
"""
