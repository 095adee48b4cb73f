"""Publish core (no Dagster): deterministic shards, the card, the manifest and the targets.

- :mod:`bf_assets.publish.bundle`: ``build_bundle`` (curate → release folder);
- :mod:`bf_assets.publish.verify`: ``verify_bundle`` (every ``PUBLISH_*`` check on the files);
- :mod:`bf_assets.publish.local`: ``LocalFolderTarget`` (all-or-nothing local releases);
- :mod:`bf_assets.publish.hub`: ``HubTarget`` (one commit and one tag per release).
"""
