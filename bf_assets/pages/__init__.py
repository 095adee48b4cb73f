"""Trial review pages: one static HTML page per reviewed trial and an index over them.

A page puts a trial's verdict, its findings and the evidence lines they cite side by side,
with the conversation around the cited steps, so a person can check a finding and decide the
trial's quarantine (``bf-assets quarantine hold|release``).  Pages are written by
:func:`bf_assets.pages.site.write_pages` for the ``trial_pages`` asset (the trials a person
needs; the others when first asked for, :mod:`bf_assets.pages.on_demand`) and for
``bf-assets show``; they read only bounded windows of the trial's files (a 300 MB trial
renders in bounded memory into a page of bounded size), escape every value taken from trial
data, load nothing from the network, and are cleaned like the export unless asked for raw.
"""
