"""Definitions added with ``dg scaffold defs`` (the dg project's ``defs_module``).

``bf_assets.definitions`` loads every module and component folder here beside the graph of
``bf_assets.defs``, so what ``dg scaffold defs`` writes shows in ``dg list defs`` and the UI.
"""
