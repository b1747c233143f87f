"""Library manifests (docs/manifest.md is the contract): text → schema → model rows → references → import.

Import is all-or-nothing: every check runs before the first write, inside the same transaction as
the writes, and every defect is reported with the manifest path of the offending field.
"""
