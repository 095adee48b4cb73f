"""The ``bf-assets`` command (``main``) and the release runner it drives (``release``)."""
